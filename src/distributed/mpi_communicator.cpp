#include "ringtrain/distributed/mpi_communicator.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <thread>

#include "ringtrain/distributed/world.hpp"

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
  // Note: the arrivals window needs one-sided MPI, which Open MPI 4 offers over shared memory and
  // RDMA networks but not over plain TCP between nodes (osc/rdma needs RDMA, osc/pt2pt
  // MPI_THREAD_MULTIPLE). Without it a timeout still ends the job, only without naming the
  // ranks that never arrived.
  if (MPI_Win_allocate(sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, comm, &published_,
                       &arrivals_) != MPI_SUCCESS) {
    arrivals_ = MPI_WIN_NULL;
    return;
  }
  RT_MPI_CHECK(MPI_Win_set_errhandler(arrivals_, MPI_ERRORS_RETURN));
  RT_MPI_CHECK(MPI_Win_lock_all(MPI_MODE_NOCHECK, arrivals_));
  *published_ = 0;
  RT_MPI_CHECK(MPI_Win_sync(arrivals_));
  peer_counts_.assign(size_, -1);
}

MpiCommunicator::~MpiCommunicator() {
  // While an error unwinds, a peer may be gone: leave the requests to MPI_Abort.
  if (std::uncaught_exceptions() > 0) return;
  for (auto& [handle, p] : pending_)
    if (!p.done) MPI_Wait(&p.request, MPI_STATUS_IGNORE);
  if (arrivals_abandoned_ || arrivals_ == MPI_WIN_NULL) return;
  MPI_Win_unlock_all(arrivals_);
  MPI_Win_free(&arrivals_);
}

// Note: the count is published before the collective is issued, by a plain store into this
// rank's own window memory made visible with MPI_Win_sync (the window stays locked for the
// communicator's life): no peer takes part, so it costs no communication, and a peer that times
// out reads how far this rank got.
int64_t MpiCommunicator::enter_collective() {
  if (arrivals_ == MPI_WIN_NULL) return entered_++;
  *published_ = ++entered_;
  RT_MPI_CHECK(MPI_Win_sync(arrivals_));
  return entered_ - 1;
}

std::string MpiCommunicator::missing_ranks(int64_t collective) {
  if (arrivals_ == MPI_WIN_NULL)
    return "which rank is missing is unknown (this MPI has no one-sided windows on this network)";
  std::vector<MPI_Request> reads(size_, MPI_REQUEST_NULL);
  for (int r = 0; r < size_; ++r)
    if (r != rank_ && MPI_Rget(&peer_counts_[r], 1, MPI_INT64_T, r, 0, 1, MPI_INT64_T, arrivals_,
                               &reads[r]) != MPI_SUCCESS)
      return "could not determine which rank (MPI_Rget on the arrivals window failed)";
  // Note: reading needs no action of the peer on shared memory and RDMA networks; elsewhere a
  // peer stuck outside MPI does not answer, which names it too.
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(std::min(options_.timeout_s, 5.0));
  std::string behind, silent;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    int done = 0;
    while (MPI_Test(&reads[r], &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    if (!done) {
      arrivals_abandoned_ = true;
      silent += str_cat(silent.empty() ? "" : ", ", r);
    } else if (peer_counts_[r] <= collective) {
      behind += str_cat(behind.empty() ? "" : ", ", r);
    }
  }
  std::string text;
  if (!behind.empty())
    text =
        str_cat("rank(s) ", behind, " never arrived (stuck before collective #", collective, ")");
  if (!silent.empty())
    text += str_cat(text.empty() ? "" : "; ", "rank(s) ", silent,
                    " did not answer the arrival check either (lost, or stuck outside MPI)");
  return text.empty() ? str_cat("by now every rank has entered collective #", collective,
                                " (a peer was late, or a network or MPI fault holds it)")
                      : text;
}

std::string MpiCommunicator::timeout_message(const std::string& what, int64_t collective) {
  return str_cat(what, " did not complete within ", options_.timeout_s, " s on rank ", rank_, ": ",
                 missing_ranks(collective), "; a peer rank is lost or stuck (--comm-timeout)");
}

// Note: MPI_Wait would block forever on a lost peer; polling with MPI_Test bounds the wait. The
// first 1000 polls spin without looking at the clock: most collectives end within microseconds,
// and a sleep from the start would add its 50 us to every one of them.
void MpiCommunicator::complete(MPI_Request& request, const std::string& what, int64_t collective) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.timeout_s);
  for (int polls = 0;; ++polls) {
    int flag = 0;
    RT_MPI_CHECK(MPI_Test(&request, &flag, MPI_STATUS_IGNORE));
    if (flag) return;
    if (polls > 1000) {
      if (std::chrono::steady_clock::now() > deadline)
        throw Error(timeout_message(what, collective));
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

// One all-reduce (maximum) of every rank's (number, kind, count, dtype) and their negations:
// the maximum and the minimum agree only when all ranks issue the same collective.
void MpiCommunicator::check_collective(int64_t collective, Kind kind, int64_t count, int dtype) {
  static const char* kinds[] = {"all_reduce", "broadcast", "barrier", "all_reduce_host"};
  const int64_t mine[4] = {collective, kind, count, dtype};
  int64_t extremes[8];
  for (int i = 0; i < 4; ++i) {
    extremes[i] = mine[i];
    extremes[4 + i] = -mine[i];
  }
  MPI_Request request;
  RT_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, extremes, 8, MPI_INT64_T, MPI_MAX, comm_, &request));
  complete(
      request,
      str_cat("the --debug-collectives check before ", kinds[kind], " of ", count, " elements"),
      collective);
  for (int i = 0; i < 4; ++i)
    RT_CHECK(extremes[i] == -extremes[4 + i], "collective mismatch at collective #", collective,
             ": rank ", rank_, " issued ", kinds[kind], " of ", count, " elements (dtype ", dtype,
             ") but the ranks disagree on ",
             (i == 0   ? "the sequence number"
              : i == 1 ? "the kind"
              : i == 2 ? "the count"
                       : "the dtype"),
             " (from ", -extremes[4 + i], " to ", extremes[i], ")");
}

CommHandle MpiCommunicator::all_reduce_async(Tensor& buffer, int64_t offset, int64_t count,
                                             ReduceOp op) {
  RT_CHECK(buffer.device().kind == DeviceKind::cpu, "MpiCommunicator: buffer on ",
           buffer.device().str(), "; MPI all-reduces host memory");
  RT_CHECK(count <= INT32_MAX, "MpiCommunicator: range of ", count, " elements is too large");
  const int64_t collective = enter_collective();
  if (options_.check_collectives)
    check_collective(collective, kAllReduce, count, static_cast<int>(buffer.dtype()));
  Pending p{MPI_REQUEST_NULL, buffer.reshaped({buffer.numel()}).slice(offset, {count}), op,
            collective};
  RT_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, p.range.raw(), static_cast<int>(count),
                              mpi_type(buffer), MPI_SUM, comm_, &p.request));
  const CommHandle h = next_handle_++;
  pending_.emplace(h, std::move(p));
  return h;
}

// Note: Open MPI advances a non-blocking collective only inside MPI calls of this rank (it has
// no progress thread by default). DDP calls this after every gradient of the backward, so the
// buckets launched early are reduced while later layers compute; without it every all-reduce
// would run in wait(), after backward.
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
             str_cat("all-reduce of ", p.range.numel(), " ", dtype_name(p.range.dtype())),
             p.collective);
  if (p.op == ReduceOp::average) divide_by(p.range, size_);
  pending_.erase(it);
}

void MpiCommunicator::broadcast(Tensor& buffer, int root) {
  RT_CHECK(buffer.nbytes() <= INT32_MAX, "MpiCommunicator::broadcast: ", buffer.describe(),
           " is too large for one call");
  const int64_t collective = enter_collective();
  if (options_.check_collectives)
    check_collective(collective, kBroadcast, static_cast<int64_t>(buffer.nbytes()),
                     static_cast<int>(DType::u8));
  MPI_Request request;
  RT_MPI_CHECK(
      MPI_Ibcast(buffer.raw(), static_cast<int>(buffer.nbytes()), MPI_BYTE, root, comm_, &request));
  complete(request, str_cat("broadcast of ", buffer.nbytes(), " bytes from rank ", root),
           collective);
}

void MpiCommunicator::barrier() {
  const int64_t collective = enter_collective();
  if (options_.check_collectives) check_collective(collective, kBarrier, 0, 0);
  MPI_Request request;
  RT_MPI_CHECK(MPI_Ibarrier(comm_, &request));
  complete(request, "barrier", collective);
}

void MpiCommunicator::all_reduce_host(double* values, int count, ReduceOp op) {
  const int64_t collective = enter_collective();
  if (options_.check_collectives)
    check_collective(collective, kAllReduceHost, count, static_cast<int>(DType::f64));
  MPI_Request request;
  RT_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM, comm_, &request));
  complete(request, str_cat("all-reduce of ", count, " host values"), collective);
  if (op == ReduceOp::average)
    for (int i = 0; i < count; ++i) values[i] /= size_;
}

}  // namespace ringtrain
