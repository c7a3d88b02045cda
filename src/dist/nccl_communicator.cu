#include <nccl.h>

#include <chrono>
#include <exception>
#include <map>
#include <thread>
#include <vector>

#include "ringtrain/backend/cuda/cuda_backend.hpp"
#include "ringtrain/backend/cuda/cuda_check.hpp"
#include "ringtrain/dist/nccl_communicator.hpp"
#include "ringtrain/dist/world.hpp"

namespace ringtrain {
namespace {

void check_nccl(ncclResult_t code, const char* call, ncclComm_t comm = nullptr) {
  if (code == ncclSuccess) return;
  throw Error(str_cat("NCCL error on ", cuda::error_context(), ": ", call, " returned ", code, " (",
                      ncclGetErrorString(code), ")",
                      comm ? str_cat(": ", ncclGetLastError(comm)) : ""));
}
#define RT_NCCL_CHECK(call) check_nccl((call), #call, comm_)

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

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(MPI_Comm comm, Device& device, const CommOptions& options)
      : host_(comm, options),
        options_(options),
        device_(device.device_id()),
        compute_(static_cast<cudaStream_t>(compute_stream(device))) {
    ncclUniqueId id{};
    if (host_.rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    RT_MPI_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm));
    check_nccl(ncclCommInitRank(&comm_, host_.size(), id, host_.rank()), "ncclCommInitRank");
    RT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    RT_CUDA_CHECK(cudaEventCreateWithFlags(&compute_ready_, cudaEventDisableTiming));
  }

  ~NcclCommunicator() override {
    // While an error unwinds a peer may be gone, and destroying would wait for it: abort.
    if (!aborted_) {
      if (std::uncaught_exceptions() > 0) {
        ncclCommAbort(comm_);
      } else {
        ncclCommDestroy(comm_);
      }
    }
    for (auto& [handle, p] : pending_) free_events_.push_back(p.done);
    for (cudaEvent_t e : free_events_) cuda::warn_on_error(cudaEventDestroy(e), "cudaEventDestroy");
    cuda::warn_on_error(cudaEventDestroy(compute_ready_), "cudaEventDestroy");
    cuda::warn_on_error(cudaStreamDestroy(stream_), "cudaStreamDestroy");
  }

  int rank() const override { return host_.rank(); }
  int size() const override { return host_.size(); }
  std::string name() const override { return "nccl"; }

  CommHandle all_reduce_async(Tensor& buffer, int64_t offset, int64_t count, ReduceOp op) override {
    check_device("all_reduce_async", buffer);
    const int64_t collective = host_.enter_collective();
    if (options_.check_collectives)
      host_.check_collective(collective, MpiCommunicator::kAllReduce, count,
                             static_cast<int>(buffer.dtype()));
    Tensor range = buffer.reshaped({buffer.numel()}).slice(offset, {count});
    after_compute();
    RT_NCCL_CHECK(ncclAllReduce(range.raw(), range.raw(), static_cast<size_t>(count),
                                nccl_type(buffer), op == ReduceOp::average ? ncclAvg : ncclSum,
                                comm_, stream_));
    const CommHandle h = next_handle_++;
    pending_.emplace(h, Pending{record_done(), collective,
                                str_cat("all-reduce of ", count, " ", dtype_name(buffer.dtype()))});
    return h;
  }

  void wait(CommHandle handle) override {
    auto it = pending_.find(handle);
    RT_CHECK(it != pending_.end(), "NcclCommunicator::wait: unknown handle ", handle);
    const Pending p = std::move(it->second);
    pending_.erase(it);
    await(p.done, p.what, p.collective);
  }

  void progress() override { check_async_error(); }

  void broadcast(Tensor& buffer, int root) override {
    check_device("broadcast", buffer);
    const int64_t collective = host_.enter_collective();
    if (options_.check_collectives)
      host_.check_collective(collective, MpiCommunicator::kBroadcast,
                             static_cast<int64_t>(buffer.nbytes()), static_cast<int>(DType::u8));
    after_compute();
    RT_NCCL_CHECK(ncclBroadcast(buffer.raw(), buffer.raw(), buffer.nbytes(), ncclUint8, root, comm_,
                                stream_));
    await(record_done(), str_cat("broadcast of ", buffer.nbytes(), " bytes from rank ", root),
          collective);
  }

  void barrier() override { host_.barrier(); }
  void all_reduce_host(double* values, int count, ReduceOp op) override {
    host_.all_reduce_host(values, count, op);
  }

 private:
  void check_device(const char* op, const Tensor& t) const {
    RT_CHECK(t.device() == device_, "NcclCommunicator::", op, ": buffer ", t.describe(),
             " is not on ", device_.str());
  }

  // The collective stream waits for everything issued on the compute stream so far.
  void after_compute() {
    RT_CUDA_CHECK(cudaEventRecord(compute_ready_, compute_));
    RT_CUDA_CHECK(cudaStreamWaitEvent(stream_, compute_ready_, 0));
  }

  cudaEvent_t record_done() {
    cudaEvent_t e = nullptr;
    if (free_events_.empty()) {
      RT_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    } else {
      e = free_events_.back();
      free_events_.pop_back();
    }
    RT_CUDA_CHECK(cudaEventRecord(e, stream_));
    return e;
  }

  // Polls the collective's event until it completes (then orders the compute stream after it),
  // a NCCL error is reported, or the timeout passes (the error then names the ranks that never
  // entered collective number `collective`, from the MPI communicator's arrivals window).
  void await(cudaEvent_t done, const std::string& what, int64_t collective) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.timeout_s);
    for (;;) {
      const cudaError_t status = cudaEventQuery(done);
      if (status == cudaSuccess) break;
      if (status != cudaErrorNotReady) RT_CUDA_CHECK(status);
      check_async_error();
      if (std::chrono::steady_clock::now() > deadline) {
        ncclCommAbort(comm_);
        aborted_ = true;
        throw Error(host_.timeout_message(str_cat("NCCL ", what), collective));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    RT_CUDA_CHECK(cudaStreamWaitEvent(compute_, done, 0));
    free_events_.push_back(done);
  }

  void check_async_error() {
    ncclResult_t async = ncclSuccess;
    RT_NCCL_CHECK(ncclCommGetAsyncError(comm_, &async));
    if (async == ncclSuccess || async == ncclInProgress) return;
    ncclCommAbort(comm_);
    aborted_ = true;
    check_nccl(async, "a NCCL collective (asynchronous error)");
  }

  MpiCommunicator host_;
  CommOptions options_;
  DeviceId device_;
  cudaStream_t compute_ = nullptr, stream_ = nullptr;
  cudaEvent_t compute_ready_ = nullptr;
  ncclComm_t comm_ = nullptr;
  bool aborted_ = false;
  CommHandle next_handle_ = 0;
  struct Pending {
    cudaEvent_t done;
    int64_t collective;
    std::string what;
  };
  std::map<CommHandle, Pending> pending_;
  std::vector<cudaEvent_t> free_events_;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm comm, Device& device,
                                                     const CommOptions& options) {
  return std::make_unique<NcclCommunicator>(comm, device, options);
}

}  // namespace ringtrain
