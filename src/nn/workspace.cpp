#include "ringtrain/nn/workspace.hpp"

namespace ringtrain {

void Workspace::reserve(Device& device, int64_t elements, DType dtype) {
  // Slots start on 64-element boundaries (256 bytes in f32), for vector loads and kernels.
  constexpr int64_t kAlign = 64;
  const int64_t rounded = (elements + kAlign - 1) / kAlign * kAlign;
  if (buffer_.defined() && rounded <= slot_elements_ && buffer_.dtype() == dtype) return;
  buffer_ = Tensor();  // the old buffer goes before the new one comes: no peak of both
  buffer_ = device.zeros({rounded * kSlots}, dtype);
  slot_elements_ = rounded;
}

Tensor Workspace::at(Slot slot, const Shape& shape) const {
  RT_CHECK(shape_numel(shape) <= slot_elements_, "Workspace: ", shape_str(shape),
           " does not fit a slot of ", slot_elements_, " elements; reserve it first");
  return buffer_.slice(int64_t{slot} * slot_elements_, shape);
}

}  // namespace ringtrain
