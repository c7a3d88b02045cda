#pragma once
// The batch one rank (or one DataParallel device) trains on at one step, written at `row` of a
// larger batch, so a single-process reference can concatenate every rank's batch.
#include <random>

#include "ringtrain/core/tensor.hpp"

namespace ringtrain::test {

inline void fill_shard(int shard, int step, int count, int classes, Tensor& images, Tensor& labels,
                       int64_t row) {
  std::mt19937_64 rng(static_cast<uint64_t>(1000 * step + shard));
  std::normal_distribution<float> dist;
  const int64_t image = images.dim(1) * images.dim(2) * images.dim(3);
  for (int i = 0; i < count; ++i) {
    for (int64_t j = 0; j < image; ++j) images.data<float>()[(row + i) * image + j] = dist(rng);
    labels.data<int>()[row + i] = static_cast<int>(rng() % static_cast<uint64_t>(classes));
  }
}

}  // namespace ringtrain::test
