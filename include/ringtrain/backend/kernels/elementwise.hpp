#pragma once
// Kernel bodies of the element-wise ops: the ReLU's gradient, the residual additions (with a
// fused ReLU), scaling, fill, dtype casts and the gradient hand-over of mixed precision. Each is
// called once per index by the CUDA grid-stride launcher and by the unit tests' host emulator.
#include <cstdint>

#include "ringtrain/backend/kernels/element.hpp"

namespace ringtrain::kernels {

template <class T>
struct ReluBackward {
  const T *y, *dy;
  T* dx;
  RT_HOST_DEVICE void operator()(int64_t i) const {
    dx[i] = to_float(y[i]) > 0.f ? dy[i] : from_float<T>(0.f);
  }
};

template <class T>
struct Add {
  const T *a, *b;
  T* y;
  bool relu;
  RT_HOST_DEVICE void operator()(int64_t i) const {
    const float v = to_float(a[i]) + to_float(b[i]);
    y[i] = from_float<T>(relu && !(v > 0.f) ? 0.f : v);
  }
};

template <class T>
struct Scale {
  T* p;
  float factor;
  RT_HOST_DEVICE void operator()(int64_t i) const { p[i] = from_float<T>(to_float(p[i]) * factor); }
};

// U is the storage type; value holds the bits to write (see CudaBackend::fill).
template <class U>
struct Fill {
  U* p;
  U value;
  RT_HOST_DEVICE void operator()(int64_t i) const { p[i] = value; }
};

template <class From, class To>
struct Cast {
  const From* in;
  To* out;
  RT_HOST_DEVICE void operator()(int64_t i) const { out[i] = from_float<To>(to_float(in[i])); }
};

// Mixed precision's gradient hand-over: acc[i] += the compute-dtype gradient g[i] in the
// accumulator's dtype (f32), and g[i] = 0 for the next backward pass (Device::accumulate).
template <class G, class Acc>
struct AccumulateAndClear {
  G* g;
  Acc* acc;
  RT_HOST_DEVICE void operator()(int64_t i) const {
    acc[i] = from_float<Acc>(to_float(acc[i]) + to_float(g[i]));
    g[i] = from_float<G>(0.f);
  }
};

}  // namespace ringtrain::kernels
