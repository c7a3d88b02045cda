#pragma once
// The memory the CPU backends' zeros() handed out: their "device" memory. A copy out of it into
// other memory is the CPU's twin of a device-to-host copy, and counts as a read of a device value
// (Device::values_read), so that a test of "no read per step" sees copies here as on CUDA. One
// record serves every CPU backend of the process: a copy between two of them (DataParallel's
// replicas) is device to device, as between two GPUs, and is not a read.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "ringtrain/core/tensor.hpp"

namespace ringtrain::cpu {

class OwnedMemory : public std::enable_shared_from_this<OwnedMemory> {
 public:
  // The process's one record.
  static std::shared_ptr<OwnedMemory> of_cpu_backends();
  // A zero-filled tensor whose bytes are recorded here until its storage is freed.
  Tensor zeros(const Shape& shape, DType dtype);
  // Whether p lies inside memory handed out here and not yet freed (a view into it included).
  bool contains(const void* p) const;

 private:
  void forget(std::uintptr_t begin);

  mutable std::mutex mutex_;
  std::map<std::uintptr_t, std::uintptr_t> ranges_;  // begin -> end, of each live allocation
};

}  // namespace ringtrain::cpu
