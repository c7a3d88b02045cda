#pragma once
#include <cstdint>
#include <vector>

#include "ringtrain/core/tensor.hpp"
#include "ringtrain/prof/host_clock.hpp"
#include "ringtrain/prof/host_spans.hpp"

namespace ringtrain {

// One assembled batch in host memory: images [n,C,H,W] in the transform's dtype and layout, and
// their labels. Valid until the next call to next().
struct HostBatch {
  int64_t index = 0;  // batch number within the epoch (or the streaming window)
  Tensor images, labels;
  Tensor crops;  // i32 [n,3] (dy, dx, flip) when the images are raw uint8, for Backend::augment
};

// Where training batches come from: the in-memory Loader or the StreamingLoader.
class BatchSource {
 public:
  virtual ~BatchSource() = default;
  virtual void start_epoch(int64_t epoch) = 0;
  // The next batch of the epoch in order, or nullptr when the epoch is done.
  virtual const HostBatch* next() = 0;
  virtual int64_t batches_per_epoch() const = 0;
  // --profile trace: from now on, every batch's assembly is timed on `clock` (a BatchSpan on
  // the lane of the thread that assembled it). Called before start_epoch(); without it nothing
  // is recorded: no clock is read, nothing allocated.
  virtual void trace_batches(const HostClock& clock) = 0;
  // The lanes of the batches handed out so far: one per loader thread, empty without tracing.
  virtual std::vector<BatchLane> batch_lanes() const = 0;
};

}  // namespace ringtrain
