#pragma once
// Kernel bodies of the classifier's bias: its addition to the GEMM's output and its gradient.
// Each is called once per index by the CUDA grid-stride launcher and by the unit tests' host
// emulator.
#include <cstdint>

#include "ringtrain/backend/kernels/element.hpp"

namespace ringtrain::kernels {

// y[rows, cols] += b[cols], row-major; one index per value of y.
template <class T>
struct AddBias {
  T* y;
  const T* b;
  int cols;
  RT_HOST_DEVICE void operator()(int64_t i) const {
    y[i] = from_float<T>(to_float(y[i]) + to_float(b[i % cols]));
  }
};

// The bias gradient: db[cols] += the column sums of dy[rows, cols]; one index per column, which
// sums its rows in order in f32 and adds the total to db once.
template <class T>
struct BiasGradient {
  const T* dy;
  T* db;
  int rows, cols;
  RT_HOST_DEVICE void operator()(int64_t j) const {
    float sum = 0.f;
    for (int i = 0; i < rows; ++i) sum += to_float(dy[int64_t{i} * cols + j]);
    db[j] = from_float<T>(to_float(db[j]) + sum);
  }
};

}  // namespace ringtrain::kernels
