#pragma once
#include <mpi.h>

#include <map>
#include <vector>

#include "ringtrain/distributed/communicator.hpp"

namespace ringtrain {

struct CommOptions {
  // A collective that has not completed after this long ends the job instead of hanging it.
  double timeout_s = 600;
  // Before each collective, check that every rank issues the same one (sequence number, kind,
  // element count, dtype) and report the first mismatch. Costs one small all-reduce each.
  bool check_collectives = false;
  // Tests: every wait() for an all-reduce first sleeps this long (a slow network).
  double debug_wait_delay_s = 0;
};

// The CPU backend's communicator: non-blocking MPI collectives on host buffers, completed by
// polling so that a lost peer becomes an error after CommOptions::timeout_s that names the ranks
// that never arrived.
class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(MPI_Comm comm, const CommOptions& options = {});
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "mpi"; }

  CommHandle all_reduce_async(Tensor& buffer, int64_t offset, int64_t count, ReduceOp op) override;
  void wait(CommHandle handle) override;
  void progress() override;
  void broadcast(Tensor& buffer, int root) override;
  void barrier() override;
  void all_reduce_host(double* values, int count, ReduceOp op) override;

  // Numbers the collective this rank enters now (0, 1, ...) and publishes the count in a window
  // that peers read when one of their collectives times out. Every collective calls it once,
  // the NCCL communicator's included.
  int64_t enter_collective();

  // The --debug-collectives check of `collective`: every rank contributes (number, kind,
  // count, dtype) and they must agree; the NCCL communicator calls it for its device collectives
  // too. Bounded by the timeout like the collectives.
  enum Kind { kAllReduce, kBroadcast, kBarrier, kAllReduceHost };
  void check_collective(int64_t collective, Kind kind, int64_t count, int dtype);

  // The error for `what` (collective number `collective`) not completing in time: names the
  // collective, this rank and the ranks that never arrived, read from their published counts
  // (within min(timeout, 5 s); a rank that does not answer is named as such).
  std::string timeout_message(const std::string& what, int64_t collective);

  // How many all-reduces were found complete by progress() before their wait(): evidence that
  // communication overlapped with computation.
  int64_t completed_before_wait() const { return completed_before_wait_; }

 private:
  struct Pending {
    MPI_Request request;
    Tensor range;
    ReduceOp op;
    int64_t collective;
    bool done = false;
  };

  // Polls until the request completes; throws naming `what` after the timeout.
  void complete(MPI_Request& request, const std::string& what, int64_t collective);
  // Which peers have not entered `collective`, read from the arrivals window.
  std::string missing_ranks(int64_t collective);

  MPI_Comm comm_;
  CommOptions options_;
  int64_t entered_ = 0;  // collectives this rank has entered
  // The arrivals window (passive target, locked for the communicator's lifetime): one int64 per
  // rank, its entered_; peer_counts_ receives the peers' values on a timeout.
  MPI_Win arrivals_ = MPI_WIN_NULL;
  int64_t* published_ = nullptr;
  std::vector<int64_t> peer_counts_;
  bool arrivals_abandoned_ = false;  // a read never completed: the window cannot be freed
  int rank_ = 0, size_ = 1;
  CommHandle next_handle_ = 0;
  std::map<CommHandle, Pending> pending_;
  int64_t completed_before_wait_ = 0;
};

}  // namespace ringtrain
