#include "owned_memory.hpp"

#include <algorithm>

namespace ringtrain::cpu {

// Note: shared, not a plain static, so that a tensor freed during the process's exit (after
// static destructors ran) still finds the record its deleter holds.
std::shared_ptr<OwnedMemory> OwnedMemory::of_cpu_backends() {
  static const std::shared_ptr<OwnedMemory> record = std::make_shared<OwnedMemory>();
  return record;
}

// Note: the tensor's storage is wrapped, not replaced. The wrapper's deleter holds the inner
// storage (freed with it) and this map (kept alive by it, so a tensor may outlive its backend and
// the static record).
Tensor OwnedMemory::zeros(const Shape& shape, DType dtype) {
  const Tensor t = Tensor::zeros(shape, dtype);
  std::shared_ptr<void> inner = t.shared_storage();
  const auto begin = reinterpret_cast<std::uintptr_t>(inner.get());
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    ranges_[begin] = begin + std::max<std::size_t>(t.nbytes(), 1);
  }
  std::shared_ptr<void> owned(inner.get(), [self = shared_from_this(), inner](void*) mutable {
    self->forget(reinterpret_cast<std::uintptr_t>(inner.get()));
    inner.reset();
  });
  return Tensor::adopt(std::move(owned), shape, dtype, DeviceId{});
}

bool OwnedMemory::contains(const void* p) const {
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  const std::lock_guard<std::mutex> lock(mutex_);
  auto next = ranges_.upper_bound(at);
  if (next == ranges_.begin()) return false;
  return at < std::prev(next)->second;
}

void OwnedMemory::forget(std::uintptr_t begin) {
  const std::lock_guard<std::mutex> lock(mutex_);
  ranges_.erase(begin);
}

}  // namespace ringtrain::cpu
