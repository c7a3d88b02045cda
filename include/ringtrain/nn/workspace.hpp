#pragma once
#include <cstdint>

#include "ringtrain/backend/device.hpp"

namespace ringtrain {

// Note: a layer's gradients and transients are live only while its own block runs, unlike the
// activations that backward reads, which live from forward to backward. So the model keeps the
// activations per layer and takes everything else from one buffer of a few slots, each as large
// as the largest activation: autograd frees a gradient once the layer below has used it, and
// this is the same peak without an allocator. Which slot holds what:
//   grad_a, grad_b  backward: the gradients at a block's output and at its input; the model
//                   alternates them from block to block
//   chain           backward: the gradient between two units of a block. A unit's batch norm
//                   has read the gradient at its output before its convolution writes the one
//                   at its input, so one slot serves both
//   scratch         forward: the projection shortcut's output, until the block adds it;
//                   backward: the gradient at one unit's convolution output
class Workspace {
 public:
  enum Slot { grad_a, grad_b, chain, scratch, kSlots };

  // Grows every slot to at least `elements` (never shrinks); the contents are not kept.
  void reserve(Device& device, int64_t elements, DType dtype);
  // The first numel(shape) elements of a slot, as a tensor of that shape.
  Tensor at(Slot slot, const Shape& shape) const;
  std::size_t bytes() const { return buffer_.nbytes(); }

 private:
  Tensor buffer_;
  int64_t slot_elements_ = 0;
};

}  // namespace ringtrain
