#include "ringtrain/loader/device_prefetcher.hpp"

#include <spdlog/spdlog.h>

namespace ringtrain {

DeviceAugment make_device_augment(const Normalization& norm, int pad, Device& device) {
  std::vector<float> table = normalization_table(norm);
  const Tensor host = Tensor::view(table.data(), {static_cast<int64_t>(table.size())}, DType::f32);
  DeviceAugment a{device.zeros(host.shape(), DType::f32), pad};
  device.copy(host, a.table);
  return a;
}

DevicePrefetcher::DevicePrefetcher(BatchSource& source, Backend& backend, StepProfiler* profiler,
                                   DeviceAugment augment)
    : source_(source), backend_(backend), profiler_(profiler), augment_(std::move(augment)) {}

// Note: the slots' device memory returns to the backend's block cache with the prefetcher, and
// the cache hands it to the next allocation on the compute stream at once. A copy still in
// flight on the copy stream (a prefetcher destroyed in the middle of an epoch: the probes, a
// stop signal) would write into that memory after its new owner had: so the copies end first.
DevicePrefetcher::~DevicePrefetcher() {
  try {
    backend_.wait_for_copies();
  } catch (const std::exception& e) {
    spdlog::warn("prefetcher: waiting for the copies in flight failed: {}", e.what());
  }
}

void DevicePrefetcher::start_epoch(int64_t epoch) {
  source_.start_epoch(epoch);
  slots_[0].in_flight = slots_[1].in_flight = false;
  current_ = 0;
  issue_copy();
}

Tensor DevicePrefetcher::landing(Tensor& storage, const Shape& shape, DType dtype, Layout layout) {
  if (!storage.defined() || storage.numel() < shape_numel(shape))
    storage = backend_.zeros(shape, dtype);
  return storage.slice(0, shape).with_layout(layout);
}

// Note: the device slot written here was read by the compute of batch k-1, which may still be
// queued: copy_to_device_async makes the copy stream wait for the compute issued so far.
void DevicePrefetcher::issue_copy() {
  const HostBatch* host = source_.next();
  Slot& s = slots_[current_];
  s.in_flight = host != nullptr;
  if (!host) return;
  const bool raw = host->crops.defined();
  RT_CHECK(!raw || augment_.table.defined(),
           "prefetcher: the loader gives raw uint8 batches, but no table to augment them with");
  const Tensor& images = host->images;
  s.batch.labels = landing(s.label_storage, host->labels.shape(), DType::i32, Layout::nchw);
  if (raw) {
    s.raw = landing(s.raw_storage, images.shape(), DType::u8, images.layout());
    s.crops = landing(s.crop_storage, host->crops.shape(), DType::i32, Layout::nchw);
    s.batch.images =
        landing(s.image_storage, images.shape(), backend_.compute_dtype(), backend_.layout());
    backend_.copy_to_device_async(images, s.raw);
    backend_.copy_to_device_async(host->crops, s.crops);
  } else {
    s.crops = Tensor();
    s.batch.images = landing(s.image_storage, images.shape(), images.dtype(), images.layout());
    backend_.copy_to_device_async(images, s.batch.images);
  }
  backend_.copy_to_device_async(host->labels, s.batch.labels);
}

void DevicePrefetcher::skip(int64_t n) {
  StepProfiler* profiler = profiler_;
  profiler_ = nullptr;
  for (int64_t i = 0; i < n; ++i)
    RT_CHECK(next(), "resume: the epoch has fewer than ", n, " batches to skip");
  profiler_ = profiler;
}

// Note: the order is what makes the loader's ring safe: batch k's copy is waited for first, and
// only then is the loader asked for batch k+1, which gives batch k's host slot back to its
// worker. Batch k+1's copy then lands in the other device slot while batch k computes.
const DeviceBatch* DevicePrefetcher::next() {
  Slot& ready = slots_[current_];
  if (!ready.in_flight) return nullptr;
  if (profiler_) profiler_->start(Phase::copy);
  backend_.wait_for_copies();
  if (ready.crops.defined())
    backend_.augment(ready.raw, ready.crops, augment_.table, augment_.pad, ready.batch.images);
  current_ = 1 - current_;
  if (profiler_) profiler_->start(Phase::data);
  issue_copy();
  return &ready.batch;
}

}  // namespace ringtrain
