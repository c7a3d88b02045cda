#pragma once
#include <cstdint>
#include <vector>

#include "ringtrain/data/dataset.hpp"

namespace ringtrain {

// Per-channel mean and standard deviation of the pixels, on the [0,1] scale.
struct Normalization {
  std::vector<float> mean, std;
};
Normalization channel_statistics(const Split& split);

// Gathers split images[indices[0..n)] into f32 NCHW, normalised, and their labels.
void assemble_batch(const Split& split, const int64_t* indices, int n, const Normalization& norm,
                    float* images, int32_t* labels);

}  // namespace ringtrain
