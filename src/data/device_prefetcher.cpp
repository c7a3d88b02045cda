#include "ringtrain/data/device_prefetcher.hpp"

namespace ringtrain {

DevicePrefetcher::DevicePrefetcher(BatchSource& source, Backend& backend, StepProfiler* profiler)
    : source_(source), backend_(backend), profiler_(profiler) {}

void DevicePrefetcher::start_epoch(int64_t epoch) {
  source_.start_epoch(epoch);
  in_flight_[0] = in_flight_[1] = false;
  current_ = 0;
  issue_copy();
}

void DevicePrefetcher::issue_copy() {
  const HostBatch* host = source_.next();
  in_flight_[current_] = host != nullptr;
  if (!host) return;
  DeviceBatch& storage = buffers_[current_];
  if (!storage.images.defined() || storage.images.dim(0) < host->images.dim(0)) {
    storage.images = backend_.zeros(host->images.shape(), host->images.dtype());
    storage.labels = backend_.zeros(host->labels.shape(), DType::i32);
  }
  DeviceBatch& view = views_[current_];
  view.images = storage.images.slice(0, host->images.shape());
  view.labels = storage.labels.slice(0, host->labels.shape());
  backend_.copy_to_device_async(host->images, view.images);
  backend_.copy_to_device_async(host->labels, view.labels);
}

void DevicePrefetcher::skip(int64_t n) {
  StepProfiler* profiler = profiler_;
  profiler_ = nullptr;
  for (int64_t i = 0; i < n; ++i)
    RT_CHECK(next(), "resume: the epoch has fewer than ", n, " batches to skip");
  profiler_ = profiler;
}

const DeviceBatch* DevicePrefetcher::next() {
  const int ready = current_;
  if (!in_flight_[ready]) return nullptr;
  if (profiler_) profiler_->start(Phase::copy);
  backend_.wait_for_copies();
  current_ = 1 - ready;
  if (profiler_) profiler_->start(Phase::data);
  issue_copy();
  return &views_[ready];
}

}  // namespace ringtrain
