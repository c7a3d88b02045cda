#pragma once
#include <mpi.h>

#include <map>

#include "ringtrain/dist/communicator.hpp"

namespace ringtrain {

// The CPU backend's communicator: MPI_Iallreduce on host buffers.
class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(MPI_Comm comm);
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

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  CommHandle next_handle_ = 0;
  std::map<CommHandle, Pending> pending_;
  int64_t completed_before_wait_ = 0;
};

}  // namespace ringtrain
