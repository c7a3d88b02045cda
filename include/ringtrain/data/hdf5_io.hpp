#pragma once
#include <string>

#include "ringtrain/data/dataset.hpp"

namespace ringtrain {

// Reads both splits of an HDF5 file in the DESIGN §6 schema into memory, validating rank,
// dims, dtype, label range and counts; errors name the file and the dataset.
Dataset read_hdf5_dataset(const std::string& path);

// Writes the schema (images chunked by 1024, optional gzip level 1-9) to a temporary file that
// is renamed into place, so a failure never leaves a partial file behind.
void write_hdf5_dataset(const std::string& path, const Dataset& data, int gzip_level = 0);

}  // namespace ringtrain
