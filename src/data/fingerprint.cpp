#include "ringtrain/data/fingerprint.hpp"

#include <algorithm>
#include <vector>

#include "ringtrain/core/hash.hpp"
#include "ringtrain/data/hdf5_io.hpp"

namespace ringtrain {
namespace {

constexpr int64_t kSampledRun = 8;  // the first and the last images of each split

void append(std::vector<unsigned char>& bytes, const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  bytes.insert(bytes.end(), p, p + size);
}

// Appends the split's dimensions, labels and sampled images to `bytes`.
void add_split(const Split& s, const std::string& path, const char* name,
               std::vector<unsigned char>& bytes) {
  const int64_t dims[4] = {s.count, s.height, s.width, s.channels};
  append(bytes, dims, sizeof dims);
  append(bytes, s.labels.data(), s.labels.size() * sizeof(int32_t));
  // Note: two runs of consecutive images, so that a streamed gzipped file decompresses two
  // chunks, not one per sampled image.
  const int64_t run = std::min(s.count, kSampledRun);
  std::vector<uint8_t> images(static_cast<size_t>(run * s.image_bytes()));
  for (const int64_t first : {int64_t{0}, s.count - run}) {
    if (s.images.empty()) {
      read_hdf5_images(path, name, first, run, images.data());
      append(bytes, images.data(), images.size());
    } else {
      append(bytes, s.image(first), images.size());
    }
  }
}

}  // namespace

std::string data_fingerprint(const Dataset& data, const std::string& path) {
  std::vector<unsigned char> bytes;
  add_split(data.train, path, "train", bytes);
  add_split(data.test, path, "test", bytes);
  return hex64(xxh64(bytes.data(), bytes.size()));
}

}  // namespace ringtrain
