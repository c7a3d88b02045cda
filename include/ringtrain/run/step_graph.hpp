#pragma once
#include <functional>

#include "ringtrain/backend/backend.hpp"
#include "ringtrain/loader/device_prefetcher.hpp"
#include "ringtrain/prof/step_profiler.hpp"

namespace ringtrain {

// --cuda-graph: a training step's device work (the gradients zeroed, forward and backward, the
// optimizer's update) captured once (Device::begin_capture) and replayed as one launch a step.
// Note: the first two steps after reset() run eagerly: the first searches cuDNN's algorithms and
// sizes the activations (and the graph's own input buffers), the second the scratch memory
// they took from the cache; none of it may happen inside a capture. The third step captures its
// work on the graph's own copy of the batch and replays it; every later step copies its batch there
// (device to device) and replays. A batch of another shape (an epoch's
// short last batch) drops the graph and starts over. The trainer resets before evaluation, which
// sizes the model's activations anew (a graph replays the addresses it saw), and at each epoch.
class StepGraph {
 public:
  // The step's device work on `batch`, with the profiler to time its phases (nullptr while
  // captured: a replay is timed as one phase, forward).
  using Work = std::function<void(const DeviceBatch& batch, StepProfiler* profiler)>;

  explicit StepGraph(Backend& backend) : backend_(backend) {}
  ~StepGraph() { reset(); }
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;

  // One step's work on `batch`: run eagerly, captured and replayed, or replayed.
  void run(const DeviceBatch& batch, StepProfiler& profiler, const Work& work);
  // The next step runs eagerly and captures anew.
  void reset();
  // Steps replayed so far (the captured one included).
  int64_t replays() const { return replays_; }

 private:
  // Captures `work` on the graph's own copy of the batch (input_), which holds this step's.
  void capture(const Work& work);

  Backend& backend_;
  static constexpr int kEagerSteps = 2;
  Shape shape_;          // of the last step's images; empty after reset()
  int eager_steps_ = 0;  // of this shape
  bool captured_ = false;
  DeviceBatch input_;  // the captured step's own copy of the batch
  int64_t replays_ = 0;
};

}  // namespace ringtrain
