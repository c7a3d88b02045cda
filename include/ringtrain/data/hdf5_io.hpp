#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ringtrain/data/dataset.hpp"

namespace ringtrain {

// The most classes a data file may have: a label beyond it is taken for corruption rather than
// a reason to allocate that many classes.
constexpr int kMaxClasses = 100000;

// Reads both splits of an HDF5 file in the schema of docs/data.md into memory, and its scalar
// text attributes (Dataset::attributes), validating that the path is a readable regular file,
// rank, dims, dtype, label range, counts, the `classes` attribute (any string type), the
// filters (each available) and the storage (every chunk written); errors name the file and the
// dataset. When the train images exceed
// max_train_image_bytes they are left on disk (train.images stays empty; labels and dims are
// read) for streaming with read_hdf5_images.
Dataset read_hdf5_dataset(const std::string& path, int64_t max_train_image_bytes = INT64_MAX);

// Reads images [first, first + count) of a split into out (NHWC uint8).
void read_hdf5_images(const std::string& path, const std::string& split, int64_t first,
                      int64_t count, uint8_t* out);

// File attributes written beside `classes`: float64 vectors and UTF-8 strings, by name.
struct FileAttributes {
  std::vector<std::pair<std::string, std::vector<double>>> numbers;
  std::vector<std::pair<std::string, std::string>> texts;
};

// Refuses, before the long part of an import, an `out` that exists (unless `force`) or is a
// folder, and one that cannot be created: its folder is created when missing, then the probe
// creates and removes OUT.tmp, the writer's own temporary file. Errors start with `what` ("data
// import-images: ").
void check_output_file(const std::string& out, bool force, const std::string& what);

// Writes the schema (images chunked by 1024, optional gzip level 1-9) and `attributes` to a
// temporary file that is renamed into place, so a failure never leaves a partial file behind.
void write_hdf5_dataset(const std::string& path, const Dataset& data, int gzip_level = 0,
                        const FileAttributes& attributes = {});

}  // namespace ringtrain
