#pragma once
// Augmentation of one image on the host: the loader's threads run it for every sample, and the
// CPU backend's augment op runs it over a batch already "on the device".
#include <cstdint>

#include "ringtrain/backend/crop.hpp"
#include "ringtrain/core/tensor.hpp"

namespace ringtrain::cpu {

struct ImageDims {
  int height = 0, width = 0, channels = 0;
  int64_t elements() const { return int64_t{height} * width * channels; }
};

// Pads `src` (uint8 HWC) with `pad` zero pixels, crops and flips it as `crop` says, and writes
// it normalised to `out` in `dtype` (f32, bf16 or f16) and `layout`. table[c * 256 + v] is the
// normalised value of pixel value v in channel c, so normalising is one lookup.
void augment_image(const uint8_t* src, ImageDims dims, Crop crop, int pad, const float* table,
                   DType dtype, Layout layout, void* out);

}  // namespace ringtrain::cpu
