#include "ringtrain/data/fingerprint.hpp"

#include <algorithm>
#include <vector>

#include "ringtrain/core/error.hpp"
#include "ringtrain/core/hash.hpp"
#include "ringtrain/core/hdf5_file.hpp"

namespace ringtrain {
namespace {

constexpr hsize_t kSampledRun = 8;  // the first and the last images of each split

// "int4[50000]": the element type and the dimensions, which the fingerprint covers.
std::string describe(hid_t ds, std::vector<hsize_t>& dims, const std::string& what) {
  Hdf5Handle space(H5Dget_space(ds), H5Sclose);
  hdf5_check(space.get(), str_cat("H5Dget_space of ", what));
  const int rank = H5Sget_simple_extent_ndims(space.get());
  hdf5_check(rank, str_cat("H5Sget_simple_extent_ndims of ", what));
  dims.resize(static_cast<size_t>(rank));
  hdf5_check(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr),
             str_cat("H5Sget_simple_extent_dims of ", what));
  Hdf5Handle type(H5Dget_type(ds), H5Tclose);
  hdf5_check(type.get(), str_cat("H5Dget_type of ", what));
  std::string text =
      str_cat(H5Tget_class(type.get()) == H5T_INTEGER ? "int" : "other",
              H5Tget_sign(type.get()) == H5T_SGN_NONE ? "u" : "s", H5Tget_size(type.get()), "[");
  for (hsize_t d : dims) text += str_cat(d, ",");
  return text + "]";
}

// Appends the split's shapes, dtypes, labels (as int64) and sampled images to `bytes`.
void add_split(hid_t file, const std::string& path, const std::string& split,
               std::vector<unsigned char>& bytes) {
  const std::string images_name = "/" + split + "/images", labels_name = "/" + split + "/labels";
  Hdf5Handle images(H5Dopen2(file, images_name.c_str(), H5P_DEFAULT), H5Dclose);
  hdf5_check(images.get(), str_cat("data fingerprint: ", path, ": dataset ", images_name));
  Hdf5Handle labels(H5Dopen2(file, labels_name.c_str(), H5P_DEFAULT), H5Dclose);
  hdf5_check(labels.get(), str_cat("data fingerprint: ", path, ": dataset ", labels_name));
  std::vector<hsize_t> image_dims, label_dims;
  const std::string header = describe(images.get(), image_dims, path + ":" + images_name) +
                             describe(labels.get(), label_dims, path + ":" + labels_name);
  bytes.insert(bytes.end(), header.begin(), header.end());
  RT_CHECK(label_dims.size() == 1 && image_dims.size() == 4 && image_dims[0] > 0,
           "data fingerprint: ", path, ": ", split, " is not N images [N,H,W,C] with N labels");
  std::vector<int64_t> values(label_dims[0]);
  hdf5_check(H5Dread(labels.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()),
             str_cat("data fingerprint: ", path, ": H5Dread of ", labels_name));
  const auto* label_bytes = reinterpret_cast<const unsigned char*>(values.data());
  bytes.insert(bytes.end(), label_bytes, label_bytes + values.size() * sizeof(int64_t));

  // Note: two runs of consecutive images, so that a gzipped file decompresses two chunks, not
  // one per sampled image (1.3 s for CIFAR-10 at one image per chunk).
  const hsize_t n = image_dims[0], run = std::min<hsize_t>(n, kSampledRun);
  hsize_t count[4] = {run, image_dims[1], image_dims[2], image_dims[3]};
  std::vector<unsigned char> images_read(run * count[1] * count[2] * count[3]);
  Hdf5Handle file_space(H5Dget_space(images.get()), H5Sclose);
  hdf5_check(file_space.get(),
             str_cat("data fingerprint: ", path, ": H5Dget_space of ", images_name));
  Hdf5Handle memory(H5Screate_simple(4, count, nullptr), H5Sclose);
  hdf5_check(memory.get(), "data fingerprint: H5Screate_simple");
  for (const hsize_t first : {hsize_t{0}, n - run}) {
    const hsize_t start[4] = {first, 0, 0, 0};
    const std::string what = str_cat("data fingerprint: ", path, ": images ", first, "-",
                                     first + run - 1, " of ", images_name);
    hdf5_check(
        H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr),
        what + ": H5Sselect_hyperslab");
    hdf5_check(H5Dread(images.get(), H5T_NATIVE_UCHAR, memory.get(), file_space.get(), H5P_DEFAULT,
                       images_read.data()),
               what + ": H5Dread");
    bytes.insert(bytes.end(), images_read.begin(), images_read.end());
  }
}

}  // namespace

std::string data_fingerprint(const std::string& path) {
  silence_hdf5();
  Hdf5Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  hdf5_check(file.get(), str_cat("data fingerprint: H5Fopen of ", path));
  std::vector<unsigned char> bytes;
  for (const char* split : {"train", "test"}) add_split(file.get(), path, split, bytes);
  return hex64(xxh64(bytes.data(), bytes.size()));
}

}  // namespace ringtrain
