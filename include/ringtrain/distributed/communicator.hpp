#pragma once
#include <cstdint>
#include <string>

#include "ringtrain/core/tensor.hpp"

namespace ringtrain {

enum class ReduceOp { sum, average };

// A collective in flight; wait() completes it.
using CommHandle = int64_t;

// Collectives over the ranks of a job. All-reduces work in place on a range of a buffer (a DDP
// bucket is a range of the flat gradient buffer) and are asynchronous: start one the moment its
// data is ready, keep computing, wait before using the result. Every rank must issue the same
// collectives in the same order.
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string name() const = 0;

  virtual CommHandle all_reduce_async(Tensor& buffer, int64_t offset, int64_t count,
                                      ReduceOp op) = 0;
  virtual void wait(CommHandle handle) = 0;
  // Orders the device's later work after the collective, without blocking the host where the
  // device can wait by itself (NCCL: the compute stream waits for the collective's event). Its
  // failure or a rank that never comes is then seen by the next wait(): the collectives of one
  // communicator complete in the order they were issued. Elsewhere, wait().
  virtual void wait_on_device(CommHandle handle) { wait(handle); }
  // Lets collectives in flight advance (MPI progresses only inside MPI calls).
  virtual void progress() = 0;
  virtual void broadcast(Tensor& buffer, int root) = 0;
  virtual void barrier() = 0;
  // Small host values (metrics, decisions), blocking.
  virtual void all_reduce_host(double* values, int count, ReduceOp op) = 0;
};

}  // namespace ringtrain
