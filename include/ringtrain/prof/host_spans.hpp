#pragma once
#include <cstdint>
#include <vector>

namespace ringtrain {

// What the host did besides the step's phases, for the Chrome trace (--profile trace): times in
// seconds on the profiler's HostClock.

// One DDP bucket's all-reduce in one step: launched (all_reduce_async), its wait begun, and
// that wait returned (the all-reduce was then complete on this rank).
struct AllReduceSpan {
  int64_t step = 0;  // the profiler's step number (its rows' `step`)
  int bucket = 0;    // in launch order: bucket 0 holds the last layers
  int64_t bytes = 0;
  int params = 0;  // parameter tensors in the bucket
  bool during_backward = false;
  double launch_s = 0, wait_s = 0, done_s = 0;
};

// One batch assembled by a loader thread.
struct BatchSpan {
  int64_t epoch = 0, batch = 0;  // batch: its index in the epoch (or the streaming window)
  int64_t images = 0;
  double start_s = 0, duration_s = 0;
};

// The batches one loader thread assembled, in the order training took them.
struct BatchLane {
  static constexpr int kSynchronous = -1;  // the calling thread (--workers 0)
  int worker = kSynchronous;
  std::vector<BatchSpan> spans;
};

}  // namespace ringtrain
