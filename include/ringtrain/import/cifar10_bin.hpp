#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ringtrain/data/dataset.hpp"

namespace ringtrain {

// CIFAR-10's images: 32x32 RGB, stored by both official distributions as 3072 bytes of CHW
// pixels (the red plane, then green, then blue, each row by row), 10 classes.
constexpr int kCifarSide = 32, kCifarChannels = 3, kCifarImageBytes = 3072, kCifarClasses = 10;

// An empty split of CIFAR-10's image size.
Split cifar10_split();

// Appends one image of CHW pixels to `split` as HWC, with its label, which must be in [0, 10):
// an error names `what` (the file) and the record.
void append_cifar10_image(const uint8_t* chw, int64_t label, Split& split, const std::string& what,
                          int64_t record);

// Appends the records of a binary batch file (each 1 label byte and 3072 bytes of CHW pixels);
// a size that is not a whole number of records is an error naming `what`.
void append_cifar10_records(const std::vector<uint8_t>& bytes, const std::string& what,
                            Split& split);

// The class names of batches.meta.txt: its non-blank lines, without trailing blanks.
std::vector<std::string> cifar10_class_names(const std::string& text);

// Reads the official CIFAR-10 binary distribution from a folder: data_batch_1..5.bin (train),
// test_batch.bin (test) and batches.meta.txt for the class names (the usual ten when it is
// absent or empty). Pixels are reordered to HWC. Errors name the file.
Dataset read_cifar10_bin(const std::string& dir);

// The text `ringtrain data inspect` prints: the file's text attributes (its provenance), then
// counts, shapes, per-class counts and per-channel mean and standard deviation of each split.
std::string inspect_dataset(const Dataset& data, const std::string& path);

}  // namespace ringtrain
