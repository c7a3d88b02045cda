#pragma once
#include <string>

#include "ringtrain/data/dataset.hpp"

namespace ringtrain {

// Reads the official CIFAR-10 binary distribution from a folder: data_batch_1..5.bin (train),
// test_batch.bin (test), records of 1 label byte + 3072 bytes of CHW pixels (32x32x3), and
// batches.meta.txt for the class names. Pixels are reordered to HWC. Errors name the file.
Dataset read_cifar10_bin(const std::string& dir);

// The text `ringtrain data inspect` prints: counts, shapes, per-class counts and per-channel
// mean and standard deviation of each split.
std::string inspect_dataset(const Dataset& data, const std::string& path);

}  // namespace ringtrain
