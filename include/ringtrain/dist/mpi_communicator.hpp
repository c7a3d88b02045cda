#pragma once
#include <mpi.h>

#include <map>

#include "ringtrain/dist/communicator.hpp"

namespace ringtrain {

struct CommOptions {
  // A collective that has not completed after this long ends the job instead of hanging it.
  double timeout_s = 600;
  // Before each collective, check that every rank issues the same one (sequence number, kind,
  // element count, dtype) and report the first mismatch. Costs two small all-reduces each.
  bool check_collectives = false;
  // Tests: every wait() for an all-reduce first sleeps this long (a slow network).
  double debug_wait_delay_s = 0;
};

// The CPU backend's communicator: non-blocking MPI collectives on host buffers, completed by
// polling so that a lost peer becomes an error after CommOptions::timeout_s.
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

  // The --debug-collectives check: every rank contributes (sequence, kind, count, dtype) and
  // they must agree; the NCCL communicator calls it for its device collectives too.
  enum Kind { kAllReduce, kBroadcast, kBarrier, kAllReduceHost };
  void check_collective(Kind kind, int64_t count, int dtype);

  // How many all-reduces were found complete by progress() before their wait(): evidence that
  // communication overlapped with computation.
  int64_t completed_before_wait() const { return completed_before_wait_; }

 private:
  struct Pending {
    MPI_Request request;
    Tensor range;
    ReduceOp op;
    bool done = false;
  };

  // Polls until the request completes; throws naming `what` after the timeout.
  void complete(MPI_Request& request, const std::string& what);

  MPI_Comm comm_;
  CommOptions options_;
  int64_t sequence_ = 0;
  int rank_ = 0, size_ = 1;
  CommHandle next_handle_ = 0;
  std::map<CommHandle, Pending> pending_;
  int64_t completed_before_wait_ = 0;
};

}  // namespace ringtrain
