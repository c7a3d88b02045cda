#pragma once
// Small host values sent to the device in stream order without waiting (Device::write).
#include <cuda_runtime.h>

#include <cstddef>

namespace ringtrain::cuda {

// A ring of pinned slots, each with an event that says when its copy to the device has read it.
// Note: a copy from pinned memory runs asynchronously, so the host must not write the slot again
// until the device has read it; the ring makes that a wait for a copy issued kSlots writes ago,
// which the device has long finished (a training step writes once), never for the step in flight.
class HostStaging {
 public:
  static constexpr int kSlots = 64;
  static constexpr std::size_t kSlotBytes = 256;

  HostStaging();
  ~HostStaging();
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;

  // Copies `bytes` (at most kSlotBytes) of `host` to `device` on `stream`, in its order.
  void write(const void* host, std::size_t bytes, void* device, cudaStream_t stream);

 private:
  unsigned char* slots_ = nullptr;  // pinned, kSlots * kSlotBytes
  cudaEvent_t read_[kSlots] = {};
  bool in_use_[kSlots] = {};
  int next_ = 0;
};

}  // namespace ringtrain::cuda
