#pragma once
// Kernel bodies of global average pooling over NHWC activations: image n's channel c is every
// c-th value of its hw x c block. Each is called once per index by the CUDA grid-stride launcher
// and by the unit tests' host emulator.
#include <cstdint>

#include "ringtrain/backend/kernels/element.hpp"

namespace ringtrain::kernels {

// y[n, c] = the mean of x's hw values of channel c in image n, summed in f32 in spatial order;
// one index per value of y.
template <class T>
struct AvgPoolForward {
  const T* x;
  T* y;
  int64_t hw, c;
  RT_HOST_DEVICE void operator()(int64_t i) const {
    const T* in = x + (i / c) * hw * c + i % c;
    float sum = 0.f;
    for (int64_t p = 0; p < hw; ++p) sum += to_float(in[p * c]);
    y[i] = from_float<T>(sum / static_cast<float>(hw));
  }
};

// dx[n, hw, c] = dy[n, c] / hw; one index per value of dx.
template <class T>
struct AvgPoolBackward {
  const T* dy;
  T* dx;
  int64_t hw, c;
  RT_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t image = i / (hw * c), channel = i % c;
    dx[i] = from_float<T>(to_float(dy[image * c + channel]) / static_cast<float>(hw));
  }
};

}  // namespace ringtrain::kernels
