#include "bad_datasets.hpp"

#include <hdf5.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "ringtrain/data/hdf5_io.hpp"
#include "ringtrain/data/synthetic.hpp"

namespace ringtrain::test {
namespace {

// Throws when an HDF5 call of the writer fails, so that a broken fixture is never mistaken for
// a rejected file.
template <class T>
T ok(T result, const char* call) {
  if (result < 0) throw std::runtime_error(std::string("bad_datasets: ") + call + " failed");
  return result;
}

void write_raw(hid_t group, const char* name, hid_t type, const std::vector<hsize_t>& dims,
               const void* data) {
  hid_t space =
      ok(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), "H5Screate_simple");
  hid_t ds =
      ok(H5Dcreate2(group, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "H5Dcreate2");
  ok(H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), "H5Dwrite");
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

// Replaces the file attribute `classes` by one of `type` and `dims` holding `data`, or removes it
// when data is null.
void replace_classes(hid_t file, hid_t type, const std::vector<hsize_t>& dims, const void* data) {
  ok(H5Adelete(file, "classes"), "H5Adelete");
  if (!data) return;
  hid_t space =
      ok(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), "H5Screate_simple");
  hid_t attr = ok(H5Acreate2(file, "classes", type, space, H5P_DEFAULT, H5P_DEFAULT), "H5Acreate2");
  ok(H5Awrite(attr, type, data), "H5Awrite");
  H5Aclose(attr);
  H5Sclose(space);
}

// Replaces `name` by an empty dataset of `type` and `dims` made with the creation list `dcpl`.
hid_t recreate(hid_t file, const char* name, hid_t type, const std::vector<hsize_t>& dims,
               hid_t dcpl) {
  ok(H5Ldelete(file, name, H5P_DEFAULT), "H5Ldelete");
  hid_t space =
      ok(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), "H5Screate_simple");
  hid_t ds = ok(H5Dcreate2(file, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), "H5Dcreate2");
  H5Sclose(space);
  return ds;
}

// /train/images [4,8,8,3] chunked by image: images 0 and 1 written, or (with LZF declared) every
// chunk written raw as if the filter had compressed it.
void write_chunked_images(hid_t file, bool lzf) {
  const std::vector<hsize_t> dims = {4, 8, 8, 3}, chunk = {1, 8, 8, 3};
  const std::vector<uint8_t> pixels(4 * 8 * 8 * 3, 7);
  hid_t dcpl = ok(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate");
  ok(H5Pset_chunk(dcpl, 4, chunk.data()), "H5Pset_chunk");
  // Note: HDF5 creates a dataset with an unavailable filter only when the filter is optional.
  if (lzf) ok(H5Pset_filter(dcpl, 32000, H5Z_FLAG_OPTIONAL, 0, nullptr), "H5Pset_filter");
  hid_t ds = recreate(file, "/train/images", H5T_STD_U8LE, dims, dcpl);
  if (lzf) {
    for (hsize_t i = 0; i < dims[0]; ++i) {
      const hsize_t offset[4] = {i, 0, 0, 0};
      ok(H5Dwrite_chunk(ds, H5P_DEFAULT, 0, offset, 8 * 8 * 3, pixels.data()), "H5Dwrite_chunk");
    }
  } else {
    const hsize_t start[4] = {0, 0, 0, 0}, count[4] = {2, 8, 8, 3};
    hid_t file_space = ok(H5Dget_space(ds), "H5Dget_space");
    ok(H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start, nullptr, count, nullptr),
       "H5Sselect_hyperslab");
    hid_t memory_space = ok(H5Screate_simple(4, count, nullptr), "H5Screate_simple");
    ok(H5Dwrite(ds, H5T_NATIVE_UINT8, memory_space, file_space, H5P_DEFAULT, pixels.data()),
       "H5Dwrite");
    H5Sclose(memory_space);
    H5Sclose(file_space);
  }
  H5Dclose(ds);
  H5Pclose(dcpl);
}

// Spoils a valid file in the way `kind` names.
void damage(const std::string& path, BadDataset kind) {
  hid_t file = ok(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), "H5Fopen");
  if (kind == BadDataset::classes_integer) {
    const int32_t classes[3] = {0, 1, 2};
    replace_classes(file, H5T_NATIVE_INT32, {3}, classes);
  } else if (kind == BadDataset::classes_rank2) {
    const char* names[3] = {"a", "b", "c"};
    hid_t type = ok(H5Tcopy(H5T_C_S1), "H5Tcopy");
    ok(H5Tset_size(type, H5T_VARIABLE), "H5Tset_size");
    replace_classes(file, type, {1, 3}, names);
    H5Tclose(type);
  } else if (kind == BadDataset::classes_not_utf8) {
    const char* names[3] = {"a", "b\xff\xfe", "c"};
    hid_t type = ok(H5Tcopy(H5T_C_S1), "H5Tcopy");
    ok(H5Tset_size(type, H5T_VARIABLE), "H5Tset_size");
    replace_classes(file, type, {3}, names);
    H5Tclose(type);
  } else if (kind == BadDataset::huge_label) {
    replace_classes(file, H5T_NATIVE_INT32, {}, nullptr);
    const int32_t labels[4] = {0, 1, INT32_MAX, 1};
    hid_t ds = ok(H5Dopen2(file, "/train/labels", H5P_DEFAULT), "H5Dopen2");
    ok(H5Dwrite(ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, labels), "H5Dwrite");
    H5Dclose(ds);
  } else if (kind == BadDataset::labels_unwritten) {
    H5Dclose(recreate(file, "/train/labels", H5T_STD_I32LE, {4}, H5P_DEFAULT));
  } else {
    write_chunked_images(file, kind == BadDataset::filter_unavailable);
  }
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
          {BadDataset::not_hdf5, "not_hdf5", "not an HDF5 file"},
          {BadDataset::classes_integer, "classes_integer",
           "attribute classes: holds int32 [3], expected strings"},
          {BadDataset::classes_rank2, "classes_rank2",
           "attribute classes: holds strings [1,3], expected strings [classes]"},
          {BadDataset::classes_not_utf8, "classes_not_utf8",
           "attribute classes: name 1 'b\\xff\\xfe' is not valid UTF-8"},
          {BadDataset::huge_label, "huge_label",
           "/train/labels: label 2147483647 at index 2 is beyond the limit of 100000 classes"},
          {BadDataset::chunks_unwritten, "chunks_unwritten",
           "/train/images: 2 of 4 chunks were never written"},
          {BadDataset::labels_unwritten, "labels_unwritten", "/train/labels: never written"},
          {BadDataset::filter_unavailable, "filter_unavailable",
           "dataset /train/images needs HDF5 filter 32000 (LZF), which this HDF5 library lacks"}};
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
  if (kind >= BadDataset::classes_integer) damage(path, kind);
}

}  // namespace ringtrain::test
