#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ringtrain {

// One split held in memory: uint8 images in NHWC order and their integer labels.
struct Split {
  int64_t count = 0;
  int height = 0, width = 0, channels = 0;
  std::vector<uint8_t> images;
  std::vector<int32_t> labels;

  int64_t image_bytes() const { return int64_t{height} * width * channels; }
  const uint8_t* image(int64_t i) const { return images.data() + i * image_bytes(); }
};

// A data file's content (schema: docs/data.md): /train and /test splits, the class names, and
// the file's scalar text attributes as read (its provenance: data/provenance.hpp), by name.
struct Dataset {
  Split train, test;
  std::vector<std::string> class_names;
  std::vector<std::pair<std::string, std::string>> attributes;
  int classes() const { return static_cast<int>(class_names.size()); }
};

}  // namespace ringtrain
