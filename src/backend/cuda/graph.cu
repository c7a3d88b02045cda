// Step capture as a CUDA graph (Device::begin_capture .. replay): the compute stream's work
// recorded once and replayed as one launch per step.
#include "backend_impl.hpp"

namespace ringtrain::cuda {

// Note: thread-local capture mode, so that a call that would break the capture (a
// synchronisation, a read back) fails on this thread, while the loader's threads, which never
// touch the compute stream, may still allocate pinned memory.
void CudaBackend::begin_capture() {
  RT_CHECK(!capture_, "begin_capture: a capture is already open");
  drop_capture();
  capture_ = std::make_unique<CapturedStep>();
  capture_->pool = std::make_shared<CapturePool>(memory_);
  RT_CUDA_CHECK(cudaStreamBeginCapture(compute_, cudaStreamCaptureModeThreadLocal));
}

void CudaBackend::end_capture() {
  RT_CHECK(capture_, "end_capture: no capture is open");
  std::unique_ptr<CapturedStep> step = std::move(capture_);
  cudaGraph_t graph = nullptr;
  RT_CUDA_CHECK(cudaStreamEndCapture(compute_, &graph));
  step->pool->close();
  const cudaError_t made = cudaGraphInstantiate(&step->exec, graph, 0);
  warn_on_error(cudaGraphDestroy(graph), "cudaGraphDestroy");
  check(made, "cudaGraphInstantiate");
  graph_ = std::move(step);
}

void CudaBackend::replay() {
  RT_CHECK(graph_, "replay: no step has been captured");
  if (log_entries_ + graph_->log_entries > kernels::kLossLogSlots) read_loss_log();
  RT_CUDA_CHECK(cudaGraphLaunch(graph_->exec, compute_));
  log_entries_ += graph_->log_entries;
}

// Note: the stream is drained before the graph goes, so that no replay in flight still uses the
// memory its pool gives back. It happens when the batch's shape changes, before evaluation, and
// at the end. A failed drain only warns: it is the error of work issued earlier, which the next
// call reports, and a drop may run while an error unwinds (destructors must not throw).
void CudaBackend::drop_capture() {
  if (capture_) abandon_capture();
  if (!graph_) return;
  warn_on_error(cudaStreamSynchronize(compute_), "cudaStreamSynchronize(compute)");
  warn_on_error(cudaGraphExecDestroy(graph_->exec), "cudaGraphExecDestroy");
  graph_.reset();
}

void CudaBackend::abandon_capture() {
  cudaGraph_t graph = nullptr;
  warn_on_error(cudaStreamEndCapture(compute_, &graph), "cudaStreamEndCapture");
  if (graph) warn_on_error(cudaGraphDestroy(graph), "cudaGraphDestroy");
  capture_.reset();
}

}  // namespace ringtrain::cuda
