#pragma once
#include <cstdint>

#include "ringtrain/data/dataset.hpp"

namespace ringtrain {

struct SynthConfig {
  int64_t train_count = 10000;
  int64_t test_count = 2000;
  int height = 32, width = 32, channels = 3;
  int classes = 10;
  uint64_t seed = 0;
};

// A learnable dataset in the DESIGN §6 schema: each class is a smooth random pattern per
// channel; a sample is its class pattern shifted by up to 3 pixels, plus strong pixel noise.
// Deterministic for a seed.
Dataset make_synthetic(const SynthConfig& config);

}  // namespace ringtrain
