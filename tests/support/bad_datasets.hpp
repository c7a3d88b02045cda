#pragma once
#include <string>
#include <vector>

namespace ringtrain::test {

// Malformed HDF5 files, one per kind of bad input the reader must reject with a clear error.
enum class BadDataset {
  no_train_images,  // /train/images missing
  wrong_rank,       // /train/images is [N, H*W*C]
  wrong_dtype,      // /train/images holds float32
  labels_out_of_range,
  count_mismatch,  // fewer labels than images
  empty_split,     // zero images
  truncated,       // a valid file cut in half
  not_hdf5,        // plain text
};

struct BadDatasetCase {
  BadDataset kind;
  std::string name;
  std::string expected_message;  // a part of the error the reader must give
};
std::vector<BadDatasetCase> bad_dataset_cases();

// Writes a file of that kind to path.
void write_bad_dataset(const std::string& path, BadDataset kind);

}  // namespace ringtrain::test
