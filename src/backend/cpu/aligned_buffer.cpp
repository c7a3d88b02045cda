#include "aligned_buffer.hpp"

#include <algorithm>

#include "ringtrain/core/error.hpp"

namespace ringtrain::cpu {

void* AlignedBuffer::reserve(size_t bytes) {
  if (bytes <= bytes_ && data_) return data_.get();
  const size_t rounded = std::max((bytes + kAlignment - 1) / kAlignment * kAlignment, kAlignment);
  void* data = std::aligned_alloc(kAlignment, rounded);
  RT_CHECK(data != nullptr, "conv: aligned_alloc of ", rounded,
           " bytes of convolution scratch failed; use a smaller batch size");
  data_.reset(data);
  bytes_ = rounded;
  return data;
}

}  // namespace ringtrain::cpu
