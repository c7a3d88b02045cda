#pragma once
// The kernel body of the augmentation on the device (--augment-on device): one output value of
// a padded, cropped, flipped and normalised batch, from the uint8 NHWC images.
#include <cstdint>

#include "ringtrain/backend/crop.hpp"
#include "ringtrain/backend/kernels/element.hpp"

namespace ringtrain::kernels {

// out[i], in out's memory order (NHWC or NCHW), so that neighbouring indices write neighbouring
// values. The source pixel comes from crop_source, the mapping the host kernel is tested
// against; crops holds each image's (dy, dx, flip). `table` is the normalisation table (c x 256
// floats): the CUDA kernel passes its copy in shared memory, the host emulator the global one.
template <class T>
struct Augment {
  const uint8_t* raw;
  const int* crops;
  T* out;
  int c, h, w, pad;
  bool nhwc;
  RT_HOST_DEVICE void operator()(int64_t i, const float* table) const {
    int64_t rest = i;
    int channel = 0, y = 0, x = 0;
    if (nhwc) {
      channel = static_cast<int>(rest % c), rest /= c;
      x = static_cast<int>(rest % w), rest /= w;
      y = static_cast<int>(rest % h), rest /= h;
    } else {
      x = static_cast<int>(rest % w), rest /= w;
      y = static_cast<int>(rest % h), rest /= h;
      channel = static_cast<int>(rest % c), rest /= c;
    }
    const int64_t image = rest;
    const int* draw = crops + 3 * image;
    int sy = 0, sx = 0;
    const bool inside = crop_source(Crop{draw[0], draw[1], draw[2] != 0}, pad, h, w, y, x, sy, sx);
    const int v = inside ? raw[((image * h + sy) * w + sx) * c + channel] : 0;
    out[i] = from_float<T>(table[channel * 256 + v]);
  }
};

}  // namespace ringtrain::kernels
