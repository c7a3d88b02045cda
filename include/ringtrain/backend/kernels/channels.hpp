#pragma once
// Kernel bodies that widen and narrow the channels of an NHWC activation or a KRSC filter, both
// a [rows, channels] matrix: the CUDA backend runs a convolution whose channel count cuDNN has no
// algorithm for at a padded count (see channels_to_try in ringtrain/backend/cuda/conv_algo.hpp).
#include <cstdint>

#include "ringtrain/backend/kernels/element.hpp"

namespace ringtrain::kernels {

// dst [rows, wide] = src [rows, narrow] with zeros in the extra channels; over dst's indices.
template <class T>
struct PadChannels {
  const T* src;
  T* dst;
  int narrow, wide;
  RT_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t row = i / wide;
    const int c = static_cast<int>(i % wide);
    dst[i] = c < narrow ? src[row * narrow + c] : from_float<T>(0.f);
  }
};

// dst [rows, narrow] = (or +=, with accumulate) the first narrow channels of src [rows, wide];
// over dst's indices.
template <class T>
struct DropChannels {
  const T* src;
  T* dst;
  int narrow, wide;
  bool accumulate;
  RT_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t row = i / narrow;
    const float v = to_float(src[row * wide + i % narrow]);
    dst[i] = from_float<T>(accumulate ? to_float(dst[i]) + v : v);
  }
};

}  // namespace ringtrain::kernels
