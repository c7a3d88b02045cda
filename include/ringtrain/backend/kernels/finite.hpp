#pragma once
// The finite check of fp16 loss scaling, as a kernel body: called once per index by the CUDA
// grid-stride launcher and by the unit tests' host emulator.
#include <cfloat>
#include <cstdint>

#include "ringtrain/backend/kernels/element.hpp"

namespace ringtrain::kernels {

// Whether v is neither infinite nor NaN: NaN fails both comparisons, an infinity one of them.
// Plain comparisons, so that g++ and nvcc (host and device) compile the same test.
RT_HOST_DEVICE inline bool is_finite(float v) {
  return v >= -FLT_MAX && v <= FLT_MAX;
}

// Note: the flag starts at 1 and every index holding a NaN or an infinity stores 0 into it.
// Several threads may store at once; they all store the same value, so the race is benign and
// needs no atomic.
template <class T>
struct AllFinite {
  const T* p;
  int* all_finite;
  RT_HOST_DEVICE void operator()(int64_t i) const {
    if (!is_finite(to_float(p[i]))) *all_finite = 0;
  }
};

}  // namespace ringtrain::kernels
