#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "ringtrain/backend/cuda/cuda_backend.hpp"
#include "ringtrain/backend/cuda/cuda_check.hpp"
#include "ringtrain/distributed/nccl_communicator.hpp"
#include "ringtrain/distributed/world.hpp"

namespace ringtrain {
namespace {

void check_nccl(ncclResult_t code, const char* call, ncclComm_t comm = nullptr) {
  if (code == ncclSuccess) return;
  throw Error(str_cat("NCCL error on ", cuda::error_context(), ": ", call, " returned ", code, " (",
                      ncclGetErrorString(code), ")",
                      comm ? str_cat(": ", ncclGetLastError(comm)) : ""));
}
#define RT_NCCL_CHECK(call) check_nccl((call), #call, comm_.get())

ncclDataType_t nccl_type(const Tensor& t) {
  switch (t.dtype()) {
    case DType::f32:
      return ncclFloat32;
    case DType::f64:
      return ncclFloat64;
    case DType::bf16:
      return ncclBfloat16;
    case DType::f16:
      return ncclFloat16;
    case DType::i32:
      return ncclInt32;
    case DType::u8:
      return ncclUint8;
  }
  throw Error(str_cat("NcclCommunicator: no NCCL type for ", t.describe()));
}

ncclRedOp_t nccl_op(ReduceOp op) {
  return op == ReduceOp::average ? ncclAvg : ncclSum;
}

// Owners of the communicator's CUDA and NCCL resources, so that a constructor that throws half-way
// releases what it made. Release failures are printed (deleters do not throw).
struct StreamDeleter {
  void operator()(cudaStream_t s) const {
    cuda::warn_on_error(cudaStreamDestroy(s), "cudaStreamDestroy");
  }
};
struct EventDeleter {
  void operator()(cudaEvent_t e) const {
    cuda::warn_on_error(cudaEventDestroy(e), "cudaEventDestroy");
  }
};
struct DeviceMemoryDeleter {
  void operator()(void* p) const { cuda::warn_on_error(cudaFree(p), "cudaFree"); }
};
// While an error unwinds a peer may be gone, and destroying would wait for it: abort.
struct NcclCommDeleter {
  void operator()(ncclComm_t comm) const {
    const bool unwinding = std::uncaught_exceptions() > 0;
    const ncclResult_t code = unwinding ? ncclCommAbort(comm) : ncclCommDestroy(comm);
    if (code != ncclSuccess)
      std::fprintf(stderr, "ringtrain: warning: NCCL error on %s: %s returned %d (%s)\n",
                   cuda::error_context().c_str(), unwinding ? "ncclCommAbort" : "ncclCommDestroy",
                   static_cast<int>(code), ncclGetErrorString(code));
  }
};
using Stream = std::unique_ptr<CUstream_st, StreamDeleter>;
using Event = std::unique_ptr<CUevent_st, EventDeleter>;
using DeviceMemory = std::unique_ptr<void, DeviceMemoryDeleter>;
using NcclComm = std::unique_ptr<ncclComm, NcclCommDeleter>;

Stream make_stream() {
  cudaStream_t s = nullptr;
  RT_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return Stream(s);
}

Event make_event() {
  cudaEvent_t e = nullptr;
  RT_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return Event(e);
}

NcclComm make_comm(const NcclUniqueId& id, int rank, int size) {
  static_assert(sizeof(NcclUniqueId) == sizeof(ncclUniqueId), "NcclUniqueId is ncclUniqueId");
  ncclUniqueId nccl_id;
  std::memcpy(&nccl_id, &id, sizeof(nccl_id));
  ncclComm_t comm = nullptr;
  check_nccl(ncclCommInitRank(&comm, size, nccl_id, rank), "ncclCommInitRank");
  return NcclComm(comm);
}

class NcclCommunicator final : public Communicator {
 public:
  // `host` (null without MPI) numbers the collectives, runs the --debug-collectives check, the
  // host scalars and barriers, and names the missing ranks on a timeout.
  NcclCommunicator(const NcclUniqueId& id, int rank, int size, Device& device,
                   const CommOptions& options, std::unique_ptr<MpiCommunicator> host)
      : host_(std::move(host)),
        options_(options),
        rank_(rank),
        size_(size),
        device_(device.device_id()),
        compute_(static_cast<cudaStream_t>(compute_stream(device))),
        stream_(make_stream()),
        compute_ready_(make_event()),
        comm_(make_comm(id, rank, size)) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "nccl"; }

  CommHandle all_reduce_async(Tensor& buffer, int64_t offset, int64_t count, ReduceOp op) override {
    check_device("all_reduce_async", buffer);
    const int64_t collective = enter(MpiCommunicator::kAllReduce, count, buffer.dtype());
    Tensor range = buffer.reshaped({buffer.numel()}).slice(offset, {count});
    after_compute();
    RT_NCCL_CHECK(ncclAllReduce(range.raw(), range.raw(), static_cast<size_t>(count),
                                nccl_type(buffer), nccl_op(op), comm_.get(), stream_.get()));
    const CommHandle h = next_handle_++;
    pending_.emplace(h, Pending{record_done(), collective,
                                str_cat("all-reduce of ", count, " ", dtype_name(buffer.dtype()))});
    return h;
  }

  void wait(CommHandle handle) override {
    auto it = pending_.find(handle);
    RT_CHECK(it != pending_.end(), "NcclCommunicator::wait: unknown handle ", handle);
    Pending p = std::move(it->second);
    pending_.erase(it);
    await(std::move(p.done), p.what, p.collective);
  }

  // Note: SyncBatchNorm's all-reduces, one per layer in forward and in backward, are waited for
  // this way: a host wait for each would drain the device ~100 times a step.
  void wait_on_device(CommHandle handle) override {
    auto it = pending_.find(handle);
    RT_CHECK(it != pending_.end(), "NcclCommunicator::wait_on_device: unknown handle ", handle);
    Pending p = std::move(it->second);
    pending_.erase(it);
    RT_CUDA_CHECK(cudaStreamWaitEvent(compute_, p.done.get(), 0));
    free_events_.push_back(std::move(p.done));
  }

  void progress() override { check_async_error(); }

  void broadcast(Tensor& buffer, int root) override {
    check_device("broadcast", buffer);
    const int64_t collective =
        enter(MpiCommunicator::kBroadcast, static_cast<int64_t>(buffer.nbytes()), DType::u8);
    after_compute();
    RT_NCCL_CHECK(ncclBroadcast(buffer.raw(), buffer.raw(), buffer.nbytes(), ncclUint8, root,
                                comm_.get(), stream_.get()));
    await(record_done(), str_cat("broadcast of ", buffer.nbytes(), " bytes from rank ", root),
          collective);
  }

  // Note: without MPI a barrier is an all-reduce of one device scalar, which no rank completes
  // before every rank has entered it.
  void barrier() override {
    if (host_) return host_->barrier();
    double token = 0;
    all_reduce_host(&token, 1, ReduceOp::sum);
  }

  void all_reduce_host(double* values, int count, ReduceOp op) override {
    if (host_) return host_->all_reduce_host(values, count, op);
    const int64_t collective = enter(MpiCommunicator::kAllReduceHost, count, DType::f64);
    const std::size_t bytes = sizeof(double) * static_cast<std::size_t>(count);
    double* scalars = device_scalars(count);
    RT_CUDA_CHECK(cudaMemcpyAsync(scalars, values, bytes, cudaMemcpyHostToDevice, stream_.get()));
    RT_NCCL_CHECK(ncclAllReduce(scalars, scalars, static_cast<size_t>(count), ncclFloat64,
                                nccl_op(op), comm_.get(), stream_.get()));
    await(record_done(), str_cat("all-reduce of ", count, " host values"), collective);
    RT_CUDA_CHECK(cudaMemcpyAsync(values, scalars, bytes, cudaMemcpyDeviceToHost, stream_.get()));
    RT_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
  }

 private:
  void check_device(const char* op, const Tensor& t) const {
    RT_CHECK(t.device() == device_, "NcclCommunicator::", op, ": buffer ", t.describe(),
             " is not on ", device_.str());
  }

  // Numbers the collective this rank enters now and, when asked, checks that every rank
  // issues the same one.
  int64_t enter(MpiCommunicator::Kind kind, int64_t count, DType dtype) {
    if (!host_) return entered_++;
    const int64_t collective = host_->enter_collective();
    if (options_.check_collectives)
      host_->check_collective(collective, kind, count, static_cast<int>(dtype));
    return collective;
  }

  std::string timeout_message(const std::string& what, int64_t collective) {
    if (host_) return host_->timeout_message(what, collective);
    return str_cat(what, " (collective ", collective, ") did not complete within ",
                   options_.timeout_s, " s on rank ", rank_, " of ", size_,
                   "; a peer rank is lost or stuck (--comm-timeout)");
  }

  // At least `count` f64 values of device memory for the host scalars.
  double* device_scalars(int count) {
    if (count > scalar_capacity_) {
      void* p = nullptr;
      RT_CUDA_CHECK(cudaMalloc(&p, sizeof(double) * static_cast<std::size_t>(count)));
      scalars_.reset(p);
      scalar_capacity_ = count;
    }
    return static_cast<double*>(scalars_.get());
  }

  // The collective stream waits for everything issued on the compute stream so far.
  void after_compute() {
    RT_CUDA_CHECK(cudaEventRecord(compute_ready_.get(), compute_));
    RT_CUDA_CHECK(cudaStreamWaitEvent(stream_.get(), compute_ready_.get(), 0));
  }

  Event record_done() {
    Event e;
    if (free_events_.empty()) {
      e = make_event();
    } else {
      e = std::move(free_events_.back());
      free_events_.pop_back();
    }
    RT_CUDA_CHECK(cudaEventRecord(e.get(), stream_.get()));
    return e;
  }

  // Polls the collective's event until it completes (then orders the compute stream after it),
  // a NCCL error is reported, or the timeout passes (the error then names the ranks that never
  // entered collective number `collective`, from the MPI communicator's arrivals window).
  void await(Event done, const std::string& what, int64_t collective) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.timeout_s);
    for (;;) {
      const cudaError_t status = cudaEventQuery(done.get());
      if (status == cudaSuccess) break;
      if (status != cudaErrorNotReady) RT_CUDA_CHECK(status);
      // Note: cudaEventQuery can leave cudaErrorNotReady as the thread's last error, and the
      // next kernel launch's check (cudaGetLastError) would report it as that kernel's failure.
      if (cudaPeekAtLastError() == cudaErrorNotReady) (void)cudaGetLastError();
      check_async_error();
      if (std::chrono::steady_clock::now() > deadline) {
        abort_comm();
        throw Error(timeout_message(str_cat("NCCL ", what), collective));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    RT_CUDA_CHECK(cudaStreamWaitEvent(compute_, done.get(), 0));
    free_events_.push_back(std::move(done));
  }

  void check_async_error() {
    ncclResult_t async = ncclSuccess;
    RT_NCCL_CHECK(ncclCommGetAsyncError(comm_.get(), &async));
    if (async == ncclSuccess || async == ncclInProgress) return;
    abort_comm();
    check_nccl(async, "a NCCL collective (asynchronous error)");
  }

  // After an abort the communicator is gone: nothing is left to destroy.
  void abort_comm() { ncclCommAbort(comm_.release()); }

  // Note: members are destroyed in reverse order: the NCCL communicator first (it may still
  // use the stream and the device scalars), the MPI communicator last.
  std::unique_ptr<MpiCommunicator> host_;
  CommOptions options_;
  int rank_, size_;
  int64_t entered_ = 0;  // collectives entered, without MPI
  DeviceId device_;
  cudaStream_t compute_;
  Stream stream_;
  Event compute_ready_;
  std::vector<Event> free_events_;
  struct Pending {
    Event done;
    int64_t collective;
    std::string what;
  };
  std::map<CommHandle, Pending> pending_;
  CommHandle next_handle_ = 0;
  DeviceMemory scalars_;
  int scalar_capacity_ = 0;
  NcclComm comm_;
};

}  // namespace

LibraryVersion nccl_version() {
  int runs = 0;
  const bool known = ncclGetVersion(&runs) == ncclSuccess;
  // ncclGetVersion encodes major * 10000 + minor * 100 + patch (NCCL 2.9 and later).
  return {"NCCL", dotted(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH),
          known ? dotted(runs / 10000, runs % 10000 / 100, runs % 100) : ""};
}

NcclUniqueId make_nccl_unique_id() {
  ncclUniqueId id;
  check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  NcclUniqueId out;
  std::memcpy(&out, &id, sizeof(out));
  return out;
}

std::unique_ptr<Communicator> make_nccl_communicator(const NcclUniqueId& id, int rank, int size,
                                                     Device& device, const CommOptions& options) {
  RT_CHECK(!options.check_collectives,
           "NcclCommunicator: the collective check (--debug-collectives) needs MPI");
  return std::make_unique<NcclCommunicator>(id, rank, size, device, options, nullptr);
}

std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm comm, Device& device,
                                                     const CommOptions& options) {
  auto host = std::make_unique<MpiCommunicator>(comm, options);
  NcclUniqueId id{};
  if (host->rank() == 0) id = make_nccl_unique_id();
  RT_MPI_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm));
  const int rank = host->rank(), size = host->size();
  return std::make_unique<NcclCommunicator>(id, rank, size, device, options, std::move(host));
}

}  // namespace ringtrain
