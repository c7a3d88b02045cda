#include "ringtrain/dist/mpi_communicator.hpp"

#include <chrono>
#include <exception>
#include <thread>

#include "ringtrain/dist/world.hpp"

namespace ringtrain {
namespace {

MPI_Datatype mpi_type(const Tensor& t) {
  switch (t.dtype()) {
    case DType::f32:
      return MPI_FLOAT;
    case DType::f64:
      return MPI_DOUBLE;
    case DType::i32:
      return MPI_INT;
    case DType::u8:
      return MPI_UNSIGNED_CHAR;
    default:
      break;
  }
  throw Error(str_cat("MpiCommunicator: cannot reduce ", t.describe()));
}

template <class T>
void scale(Tensor& t, double factor) {
  T* p = t.data<T>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(p[i] * factor);
}

void divide_by(Tensor& t, int size) {
  if (t.dtype() == DType::f32) return scale<float>(t, 1.0 / size);
  if (t.dtype() == DType::f64) return scale<double>(t, 1.0 / size);
  throw Error(str_cat("MpiCommunicator: cannot average ", t.describe()));
}

}  // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm comm, const CommOptions& options)
    : comm_(comm), options_(options) {
  RT_CHECK(options.timeout_s > 0, "MpiCommunicator: timeout must be positive, got ",
           options.timeout_s);
  RT_MPI_CHECK(MPI_Comm_rank(comm, &rank_));
  RT_MPI_CHECK(MPI_Comm_size(comm, &size_));
}

MpiCommunicator::~MpiCommunicator() {
  // While an error unwinds, a peer may be gone: leave the requests to MPI_Abort.
  if (std::uncaught_exceptions() > 0) return;
  for (auto& [handle, p] : pending_)
    if (!p.done) MPI_Wait(&p.request, MPI_STATUS_IGNORE);
}

void MpiCommunicator::complete(MPI_Request& request, const std::string& what) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.timeout_s);
  for (int polls = 0;; ++polls) {
    int flag = 0;
    RT_MPI_CHECK(MPI_Test(&request, &flag, MPI_STATUS_IGNORE));
    if (flag) return;
    if (polls > 1000) {
      if (std::chrono::steady_clock::now() > deadline)
        throw Error(str_cat(what, " did not complete within ", options_.timeout_s, " s on rank ",
                            rank_, ": a peer rank is lost or stuck (--comm-timeout)"));
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

// Every rank contributes (sequence, kind, count, dtype); the maximum and the minimum agree only
// when all ranks issue the same collective.
void MpiCommunicator::check_collective(Kind kind, int64_t count, int dtype) {
  const int64_t mine[4] = {sequence_++, kind, count, dtype};
  int64_t high[4], low[4];
  RT_MPI_CHECK(MPI_Allreduce(mine, high, 4, MPI_INT64_T, MPI_MAX, comm_));
  RT_MPI_CHECK(MPI_Allreduce(mine, low, 4, MPI_INT64_T, MPI_MIN, comm_));
  static const char* kinds[] = {"all_reduce", "broadcast", "barrier", "all_reduce_host"};
  for (int i = 0; i < 4; ++i)
    RT_CHECK(high[i] == low[i], "collective mismatch at collective #", mine[0], ": rank ", rank_,
             " issued ", kinds[kind], " of ", count, " elements (dtype ", dtype,
             ") but the ranks disagree on ",
             (i == 0   ? "the sequence number"
              : i == 1 ? "the kind"
              : i == 2 ? "the count"
                       : "the dtype"),
             " (from ", low[i], " to ", high[i], ")");
}

CommHandle MpiCommunicator::all_reduce_async(Tensor& buffer, int64_t offset, int64_t count,
                                             ReduceOp op) {
  RT_CHECK(buffer.device().kind == Device::Kind::cpu, "MpiCommunicator: buffer on ",
           buffer.device().str(), "; MPI all-reduces host memory");
  RT_CHECK(count <= INT32_MAX, "MpiCommunicator: range of ", count, " elements is too large");
  if (options_.check_collectives)
    check_collective(kAllReduce, count, static_cast<int>(buffer.dtype()));
  Pending p{MPI_REQUEST_NULL, buffer.reshaped({buffer.numel()}).slice(offset, {count}), op};
  RT_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, p.range.raw(), static_cast<int>(count),
                              mpi_type(buffer), MPI_SUM, comm_, &p.request));
  const CommHandle h = next_handle_++;
  pending_.emplace(h, std::move(p));
  return h;
}

void MpiCommunicator::progress() {
  for (auto& [handle, p] : pending_) {
    if (p.done) continue;
    int flag = 0;
    RT_MPI_CHECK(MPI_Test(&p.request, &flag, MPI_STATUS_IGNORE));
    if (flag) {
      p.done = true;
      ++completed_before_wait_;
    }
  }
}

void MpiCommunicator::wait(CommHandle handle) {
  auto it = pending_.find(handle);
  RT_CHECK(it != pending_.end(), "MpiCommunicator::wait: unknown handle ", handle);
  Pending& p = it->second;
  if (options_.debug_wait_delay_s > 0)
    std::this_thread::sleep_for(std::chrono::duration<double>(options_.debug_wait_delay_s));
  if (!p.done)
    complete(p.request,
             str_cat("all-reduce of ", p.range.numel(), " ", dtype_name(p.range.dtype())));
  if (p.op == ReduceOp::average) divide_by(p.range, size_);
  pending_.erase(it);
}

void MpiCommunicator::broadcast(Tensor& buffer, int root) {
  RT_CHECK(buffer.nbytes() <= INT32_MAX, "MpiCommunicator::broadcast: ", buffer.describe(),
           " is too large for one call");
  if (options_.check_collectives)
    check_collective(kBroadcast, static_cast<int64_t>(buffer.nbytes()),
                     static_cast<int>(DType::u8));
  MPI_Request request;
  RT_MPI_CHECK(
      MPI_Ibcast(buffer.raw(), static_cast<int>(buffer.nbytes()), MPI_BYTE, root, comm_, &request));
  complete(request, str_cat("broadcast of ", buffer.nbytes(), " bytes from rank ", root));
}

void MpiCommunicator::barrier() {
  if (options_.check_collectives) check_collective(kBarrier, 0, 0);
  MPI_Request request;
  RT_MPI_CHECK(MPI_Ibarrier(comm_, &request));
  complete(request, "barrier");
}

void MpiCommunicator::all_reduce_host(double* values, int count, ReduceOp op) {
  if (options_.check_collectives)
    check_collective(kAllReduceHost, count, static_cast<int>(DType::f64));
  MPI_Request request;
  RT_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM, comm_, &request));
  complete(request, str_cat("all-reduce of ", count, " host values"));
  if (op == ReduceOp::average)
    for (int i = 0; i < count; ++i) values[i] /= size_;
}

}  // namespace ringtrain
