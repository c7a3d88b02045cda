#pragma once
#include "ringtrain/backend/backend.hpp"
#include "ringtrain/loader/augment.hpp"
#include "ringtrain/loader/batch_source.hpp"
#include "ringtrain/prof/step_profiler.hpp"

namespace ringtrain {

// A batch on the backend's device.
struct DeviceBatch {
  Tensor images, labels;
};

// What the device needs to augment raw batches (those with HostBatch::crops): the
// normalisation table on the device (f32 [C*256], see normalization_table) and the padding the
// crops were drawn for.
struct DeviceAugment {
  Tensor table;
  int pad = 0;
};
// The table of `norm` uploaded to the backend's device.
DeviceAugment make_device_augment(const Normalization& norm, int pad, Device& device);

// Keeps the host-to-device copy of batch k+1 in flight while batch k computes: next() waits for
// batch k's copy, issues batch k+1's into the other buffer, and returns batch k. A raw batch is
// augmented on the device (Backend::augment) as soon as its copy is done.
class DevicePrefetcher {
 public:
  // With a profiler, the wait for batch k's copy (and its augmentation on the device) is timed
  // as Phase::copy and the wait for the loader's batch k+1 (and, on the CPU, its synchronous
  // copy) as Phase::data.
  DevicePrefetcher(BatchSource& source, Backend& backend, StepProfiler* profiler = nullptr,
                   DeviceAugment augment = {});
  // Waits for the copies in flight: their device memory goes back to the backend's cache.
  ~DevicePrefetcher();
  DevicePrefetcher(const DevicePrefetcher&) = delete;
  DevicePrefetcher& operator=(const DevicePrefetcher&) = delete;

  void start_epoch(int64_t epoch);
  // Passes over the next n batches untimed (a run resumed in the middle of an epoch).
  void skip(int64_t n);
  // The batch to compute on now, or nullptr at the end of the epoch. Valid until the next call.
  const DeviceBatch* next();

 private:
  // One of the two batches in flight: where its copy lands and what next() hands out.
  struct Slot {
    Tensor image_storage, label_storage, raw_storage, crop_storage;  // full-size device memory
    Tensor raw, crops;  // the copied uint8 images and their crops, when augmented on the device
    DeviceBatch batch;  // views sized for the batch in flight
    bool in_flight = false;
  };

  void issue_copy();
  // A view of `storage` with the given shape, dtype and layout, growing the storage if needed.
  Tensor landing(Tensor& storage, const Shape& shape, DType dtype, Layout layout);

  BatchSource& source_;
  Backend& backend_;
  StepProfiler* profiler_;
  DeviceAugment augment_;
  Slot slots_[2];
  int current_ = 0;
};

}  // namespace ringtrain
