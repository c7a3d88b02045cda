#pragma once
#include <string>

#include "ringtrain/data/dataset.hpp"

namespace ringtrain {

// What identifies a dataset by its content, not its path: XXH64 (16 hex digits) of both
// splits' dimensions, all labels and a sample of images (the first 8 and the last 8 of each
// split), as values, so that a moved, copied or recompressed file keeps it and another file at
// the same path changes it. Hashes what read_hdf5_dataset already loaded; only train images
// left on disk for streaming are read, from `path` (the 16 sampled ones).
std::string data_fingerprint(const Dataset& data, const std::string& path);

}  // namespace ringtrain
