#pragma once
#include <string>

namespace ringtrain {

// What identifies a dataset file by its content, not its path: XXH64 (16 hex digits) of both
// splits' shapes and dtypes, all labels and a sample of images (the first 8 and the last 8 of
// each split), as values, so that a moved, copied or recompressed file keeps it and another file
// at the same path changes it. Reads the file itself: 2 ms for CIFAR-10 (uncompressed, in the
// page cache; 26 ms cold), 0.12 s gzipped (four chunks decompressed). Errors name the file and
// the dataset.
std::string data_fingerprint(const std::string& path);

}  // namespace ringtrain
