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
  // The kinds below spoil an otherwise valid file.
  classes_integer,     // the `classes` attribute holds int32 [3]
  classes_rank2,       // the `classes` attribute holds strings [1, 3]
  classes_not_utf8,    // a class name holds the bytes 0xFF 0xFE
  huge_label,          // label 2^31-1 and no `classes` attribute
  chunks_unwritten,    // /train/images chunked by image, two of its four chunks never written
  labels_unwritten,    // /train/labels created but never written
  filter_unavailable,  // /train/images compressed with LZF (filter 32000), absent from libhdf5
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
