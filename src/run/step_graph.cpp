#include "ringtrain/run/step_graph.hpp"

#include <utility>

namespace ringtrain {

void StepGraph::run(const DeviceBatch& batch, StepProfiler& profiler, const Work& work) {
  if (batch.images.shape() != shape_) {
    reset();
    shape_ = batch.images.shape();
    input_.images = backend_.zeros(shape_, batch.images.dtype());
    input_.labels = backend_.zeros(batch.labels.shape(), batch.labels.dtype());
  }
  if (!captured_ && eager_steps_ < kEagerSteps) {
    ++eager_steps_;
    work(batch, &profiler);
    return;
  }
  backend_.copy(batch.images, input_.images);
  backend_.copy(batch.labels, input_.labels);
  if (!captured_) capture(work);
  profiler.start(Phase::forward);
  backend_.replay();
  ++replays_;
}

void StepGraph::capture(const Work& work) {
  backend_.begin_capture();
  try {
    work(input_, nullptr);
    backend_.end_capture();
  } catch (...) {
    backend_.drop_capture();  // the device leaves capture mode before the error goes on
    throw;
  }
  captured_ = true;
}

void StepGraph::reset() {
  if (std::exchange(captured_, false)) backend_.drop_capture();
  eager_steps_ = 0;
  shape_ = Shape();
  input_ = DeviceBatch();
}

}  // namespace ringtrain
