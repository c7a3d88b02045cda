#pragma once
#include <cstdint>

#include <string>

#include "ringtrain/data/dataset.hpp"
#include "ringtrain/data/hdf5_io.hpp"

namespace ringtrain {

// The largest synthetic dataset asked for: images per split, and pixels per side.
constexpr int64_t kMaxSynthImages = 100000000;
constexpr int kMaxSynthSide = 4096;

struct SynthConfig {
  int64_t train_count = 10000;
  int64_t test_count = 2000;
  int height = 32, width = 32, channels = 3;
  int classes = 10;
  uint64_t seed = 0;
};

// A learnable dataset in the schema of docs/ARCHITECTURE.md: each class is a smooth random pattern
// per channel; a sample is its class pattern shifted by up to 3 pixels, plus strong pixel noise.
// Deterministic for a seed. Throws an Error for settings out of range, or a dataset larger than
// this machine's memory (it is built in memory before it is written).
Dataset make_synthetic(const SynthConfig& config);

// The provenance of `data`, made by make_synthetic(config) for `importer` (the command): the
// generator and its settings, the seed, and the content hash (data/provenance.hpp).
FileAttributes synthetic_attributes(const SynthConfig& config, const Dataset& data,
                                    const std::string& importer);

}  // namespace ringtrain
