#pragma once
// The ordered reduction body the CUDA backend's sums end with: each column of a row-major
// [count, width] matrix summed by one index, row after row. The order of the additions depends
// on the matrix alone, never on the launch geometry, so the sums are the same bits on every run
// and every GPU (no atomics, no trees shaped by the grid).
#include <cstdint>

#include "ringtrain/backend/kernels/host_device.hpp"

namespace ringtrain::kernels {

// sums[j] = values[j] + values[width + j] + ... + values[(count - 1) * width + j] in S, for
// j < width (run over `width` indices; a single total is width 1, one index).
template <class V, class S>
struct ColumnSums {
  const V* values;
  int64_t count, width;
  S* sums;
  RT_HOST_DEVICE void operator()(int64_t j) const {
    S s = 0;
    for (int64_t k = 0; k < count; ++k) s += values[k * width + j];
    sums[j] = s;
  }
};

}  // namespace ringtrain::kernels
