#pragma once
#include "ringtrain/backend/backend.hpp"
#include "ringtrain/data/batch_source.hpp"
#include "ringtrain/prof/step_profiler.hpp"

namespace ringtrain {

// A batch on the backend's device.
struct DeviceBatch {
  Tensor images, labels;
};

// Keeps the host-to-device copy of batch k+1 in flight while batch k computes: next() waits for
// batch k's copy, issues batch k+1's into the other buffer, and returns batch k.
class DevicePrefetcher {
 public:
  // With a profiler, the wait for batch k's copy is timed as Phase::copy and the wait for the
  // loader's batch k+1 (and, on the CPU, its synchronous copy) as Phase::data.
  DevicePrefetcher(BatchSource& source, Backend& backend, StepProfiler* profiler = nullptr);

  void start_epoch(int64_t epoch);
  // Passes over the next n batches untimed (a run resumed in the middle of an epoch).
  void skip(int64_t n);
  // The batch to compute on now, or nullptr at the end of the epoch. Valid until the next call.
  const DeviceBatch* next();

 private:
  void issue_copy();

  BatchSource& source_;
  Backend& backend_;
  StepProfiler* profiler_;
  DeviceBatch buffers_[2];  // full-size device storage
  DeviceBatch views_[2];    // sized for the batch in flight
  bool in_flight_[2] = {false, false};
  int current_ = 0;
};

}  // namespace ringtrain
