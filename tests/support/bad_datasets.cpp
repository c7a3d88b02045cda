#include "bad_datasets.hpp"

#include <hdf5.h>

#include <filesystem>
#include <fstream>

#include "ringtrain/data/hdf5_io.hpp"
#include "ringtrain/data/synthetic.hpp"

namespace ringtrain::test {
namespace {

void write_raw(hid_t group, const char* name, hid_t type, const std::vector<hsize_t>& dims,
               const void* data) {
  hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  hid_t ds = H5Dcreate2(group, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
  H5Dclose(ds);
  H5Sclose(space);
}

// A valid /test split plus a /train split shaped by `kind`.
void write_with_bad_train(const std::string& path, BadDataset kind) {
  const int n = 4, h = 8, w = 8, c = 3;
  std::vector<uint8_t> pixels(n * h * w * c, 7);
  std::vector<float> fpixels(pixels.size(), 0.5f);
  std::vector<int32_t> labels = {0, 1, 2, 1};
  hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  for (const char* split : {"train", "test"}) {
    hid_t g = H5Gcreate2(file, split, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const bool bad = std::string(split) == "train";
    std::vector<int32_t> l = labels;
    if (bad && kind == BadDataset::labels_out_of_range) l[2] = 10;
    const hsize_t count = (bad && kind == BadDataset::count_mismatch) ? n - 1 : n;
    if (bad && kind == BadDataset::empty_split) {
      write_raw(g, "images", H5T_NATIVE_UINT8, {0, h, w, c}, pixels.data());
      write_raw(g, "labels", H5T_NATIVE_INT32, {0}, l.data());
    } else {
      if (!(bad && kind == BadDataset::no_train_images)) {
        if (bad && kind == BadDataset::wrong_rank)
          write_raw(g, "images", H5T_NATIVE_UINT8, {n, h * w * c}, pixels.data());
        else if (bad && kind == BadDataset::wrong_dtype)
          write_raw(g, "images", H5T_NATIVE_FLOAT, {n, h, w, c}, fpixels.data());
        else
          write_raw(g, "images", H5T_NATIVE_UINT8, {n, h, w, c}, pixels.data());
      }
      write_raw(g, "labels", H5T_NATIVE_INT32, {count}, l.data());
    }
    H5Gclose(g);
  }
  const hsize_t classes = 3;
  const char* names[3] = {"a", "b", "c"};
  hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, H5T_VARIABLE);
  hid_t space = H5Screate_simple(1, &classes, nullptr);
  hid_t attr = H5Acreate2(file, "classes", type, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(attr, type, names);
  H5Aclose(attr);
  H5Sclose(space);
  H5Tclose(type);
  H5Fclose(file);
}

}  // namespace

std::vector<BadDatasetCase> bad_dataset_cases() {
  return {{BadDataset::no_train_images, "no_train_images", "/train/images: missing"},
          {BadDataset::wrong_rank, "wrong_rank", "/train/images: expected rank 4"},
          {BadDataset::wrong_dtype, "wrong_dtype", "/train/images: expected uint8"},
          {BadDataset::labels_out_of_range, "labels_out_of_range",
           "label 10 at index 2 outside [0, 3)"},
          {BadDataset::count_mismatch, "count_mismatch", "/train/labels: [3] labels for 4 images"},
          {BadDataset::empty_split, "empty_split", "/train/images: empty split"},
          {BadDataset::truncated, "truncated", "data: "},
          {BadDataset::not_hdf5, "not_hdf5", "not an HDF5 file"}};
}

void write_bad_dataset(const std::string& path, BadDataset kind) {
  if (kind == BadDataset::not_hdf5) {
    std::ofstream(path) << "this is not an HDF5 file\n";
    return;
  }
  if (kind == BadDataset::truncated) {
    SynthConfig c;
    c.train_count = 300;
    c.test_count = 50;
    write_hdf5_dataset(path, make_synthetic(c));
    std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
    return;
  }
  write_with_bad_train(path, kind);
}

}  // namespace ringtrain::test
