#include "ringtrain/data/hdf5_io.hpp"

#include <hdf5.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "ringtrain/core/error.hpp"
#include "ringtrain/core/hdf5_file.hpp"

namespace ringtrain {
namespace {

using Handle = Hdf5Handle;

std::vector<hsize_t> dims_of(hid_t dataset) {
  Handle space(H5Dget_space(dataset), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> dims(static_cast<size_t>(std::max(rank, 0)));
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  return dims;
}

std::string dims_str(const std::vector<hsize_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

Split read_split(hid_t file, const std::string& path, const std::string& name, bool load_images) {
  const std::string images_name = "/" + name + "/images", labels_name = "/" + name + "/labels";
  auto where = [&](const std::string& ds) {
    return str_cat("data: ", path, ": dataset ", ds, ": ");
  };
  RT_CHECK(H5Lexists(file, ("/" + name).c_str(), H5P_DEFAULT) > 0 &&
               H5Lexists(file, images_name.c_str(), H5P_DEFAULT) > 0,
           where(images_name), "missing (expected uint8 [N,H,W,C])");
  RT_CHECK(H5Lexists(file, labels_name.c_str(), H5P_DEFAULT) > 0, where(labels_name),
           "missing (expected integer [N])");
  Handle images(H5Dopen2(file, images_name.c_str(), H5P_DEFAULT), H5Dclose);
  Handle labels(H5Dopen2(file, labels_name.c_str(), H5P_DEFAULT), H5Dclose);
  RT_CHECK(images.ok(), where(images_name), "cannot be opened");
  RT_CHECK(labels.ok(), where(labels_name), "cannot be opened");

  const auto idims = dims_of(images.get()), ldims = dims_of(labels.get());
  RT_CHECK(idims.size() == 4, where(images_name), "expected rank 4 [N,H,W,C], got ",
           dims_str(idims));
  RT_CHECK(idims[3] == 1 || idims[3] == 3, where(images_name), "expected 1 or 3 channels, got ",
           dims_str(idims));
  RT_CHECK(idims[0] > 0 && idims[1] > 0 && idims[2] > 0, where(images_name), "empty split ",
           dims_str(idims));
  RT_CHECK(ldims.size() == 1, where(labels_name), "expected rank 1 [N], got ", dims_str(ldims));
  RT_CHECK(ldims[0] == idims[0], where(labels_name), dims_str(ldims), " labels for ", idims[0],
           " images");

  Handle itype(H5Dget_type(images.get()), H5Tclose), ltype(H5Dget_type(labels.get()), H5Tclose);
  RT_CHECK(H5Tget_class(itype.get()) == H5T_INTEGER && H5Tget_size(itype.get()) == 1 &&
               H5Tget_sign(itype.get()) == H5T_SGN_NONE,
           where(images_name), "expected uint8 pixels");
  RT_CHECK(H5Tget_class(ltype.get()) == H5T_INTEGER, where(labels_name), "expected integer labels");

  Split s;
  s.count = static_cast<int64_t>(idims[0]);
  s.height = static_cast<int>(idims[1]);
  s.width = static_cast<int>(idims[2]);
  s.channels = static_cast<int>(idims[3]);
  s.labels.resize(static_cast<size_t>(s.count));
  if (load_images) {
    s.images.resize(static_cast<size_t>(s.count * s.image_bytes()));
    RT_CHECK(H5Dread(images.get(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                     s.images.data()) >= 0,
             where(images_name), "read failed (truncated or corrupt file?)");
  }
  RT_CHECK(
      H5Dread(labels.get(), H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, s.labels.data()) >= 0,
      where(labels_name), "read failed (truncated or corrupt file?)");
  return s;
}

std::vector<std::string> read_class_names(hid_t file) {
  if (H5Aexists(file, "classes") <= 0) return {};
  Handle attr(H5Aopen(file, "classes", H5P_DEFAULT), H5Aclose);
  Handle space(H5Aget_space(attr.get()), H5Sclose);
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), H5T_VARIABLE);
  std::vector<char*> raw(static_cast<size_t>(n));
  if (H5Aread(attr.get(), type.get(), raw.data()) < 0) return {};
  std::vector<std::string> names(raw.begin(), raw.end());
  H5Dvlen_reclaim(type.get(), space.get(), H5P_DEFAULT, raw.data());
  return names;
}

void check_labels(const Split& s, int classes, const std::string& path, const std::string& name) {
  for (int64_t i = 0; i < s.count; ++i)
    RT_CHECK(s.labels[i] >= 0 && s.labels[i] < classes, "data: ", path, ": dataset /", name,
             "/labels: label ", s.labels[i], " at index ", i, " outside [0, ", classes, ")");
}

void write_split(hid_t file, const std::string& name, const Split& s, int gzip_level) {
  Handle group(H5Gcreate2(file, ("/" + name).c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
               H5Gclose);
  RT_CHECK(group.ok(), "data: cannot create group /", name);
  const hsize_t idims[4] = {static_cast<hsize_t>(s.count), static_cast<hsize_t>(s.height),
                            static_cast<hsize_t>(s.width), static_cast<hsize_t>(s.channels)};
  const hsize_t chunk[4] = {std::min<hsize_t>(1024, idims[0]), idims[1], idims[2], idims[3]};
  Handle ispace(H5Screate_simple(4, idims, nullptr), H5Sclose);
  Handle props(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  H5Pset_chunk(props.get(), 4, chunk);
  if (gzip_level > 0) H5Pset_deflate(props.get(), static_cast<unsigned>(gzip_level));
  Handle images(H5Dcreate2(group.get(), "images", H5T_STD_U8LE, ispace.get(), H5P_DEFAULT,
                           props.get(), H5P_DEFAULT),
                H5Dclose);
  RT_CHECK(images.ok() && H5Dwrite(images.get(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                                   s.images.data()) >= 0,
           "data: cannot write /", name, "/images");
  const hsize_t ldims[1] = {static_cast<hsize_t>(s.count)};
  Handle lspace(H5Screate_simple(1, ldims, nullptr), H5Sclose);
  Handle labels(H5Dcreate2(group.get(), "labels", H5T_STD_I32LE, lspace.get(), H5P_DEFAULT,
                           H5P_DEFAULT, H5P_DEFAULT),
                H5Dclose);
  RT_CHECK(labels.ok() && H5Dwrite(labels.get(), H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                                   s.labels.data()) >= 0,
           "data: cannot write /", name, "/labels");
}

void write_class_names(hid_t file, const std::vector<std::string>& names) {
  const hsize_t n = names.size();
  Handle space(H5Screate_simple(1, &n, nullptr), H5Sclose);
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), H5T_VARIABLE);
  Handle attr(H5Acreate2(file, "classes", type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
              H5Aclose);
  std::vector<const char*> raw;
  for (const auto& s : names) raw.push_back(s.c_str());
  RT_CHECK(attr.ok() && H5Awrite(attr.get(), type.get(), raw.data()) >= 0,
           "data: cannot write the classes attribute");
}

Handle open_file(const std::string& path) {
  silence_hdf5();
  RT_CHECK(std::filesystem::exists(path), "data: ", path, ": no such file");
  RT_CHECK(H5Fis_hdf5(path.c_str()) > 0, "data: ", path, ": not an HDF5 file (or truncated)");
  Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  RT_CHECK(file.ok(), "data: ", path, ": cannot open as HDF5");
  return file;
}

}  // namespace

Dataset read_hdf5_dataset(const std::string& path, int64_t max_train_image_bytes) {
  Handle file = open_file(path);
  Dataset d;
  d.train = read_split(file.get(), path, "train", false);
  if (d.train.count * d.train.image_bytes() <= max_train_image_bytes)
    d.train = read_split(file.get(), path, "train", true);
  d.test = read_split(file.get(), path, "test", true);
  RT_CHECK(d.train.height == d.test.height && d.train.width == d.test.width &&
               d.train.channels == d.test.channels,
           "data: ", path, ": /train/images and /test/images differ in H,W,C");
  d.class_names = read_class_names(file.get());
  if (d.class_names.empty()) {
    int max_label = 0;
    for (int32_t l : d.train.labels) max_label = std::max(max_label, l);
    for (int i = 0; i <= max_label; ++i) d.class_names.push_back("class" + std::to_string(i));
  }
  check_labels(d.train, d.classes(), path, "train");
  check_labels(d.test, d.classes(), path, "test");
  return d;
}

void read_hdf5_images(const std::string& path, const std::string& split, int64_t first,
                      int64_t count, uint8_t* out) {
  Handle file = open_file(path);
  const std::string name = "/" + split + "/images";
  Handle images(H5Dopen2(file.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
  RT_CHECK(images.ok(), "data: ", path, ": dataset ", name, ": cannot be opened");
  const auto dims = dims_of(images.get());
  RT_CHECK(dims.size() == 4 && first >= 0 && first + count <= static_cast<int64_t>(dims[0]),
           "data: ", path, ": dataset ", name, ": images [", first, ", ", first + count,
           ") outside ", dims_str(dims));
  const hsize_t start[4] = {static_cast<hsize_t>(first), 0, 0, 0};
  const hsize_t size[4] = {static_cast<hsize_t>(count), dims[1], dims[2], dims[3]};
  Handle file_space(H5Dget_space(images.get()), H5Sclose);
  H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, size, nullptr);
  Handle memory_space(H5Screate_simple(4, size, nullptr), H5Sclose);
  RT_CHECK(H5Dread(images.get(), H5T_NATIVE_UINT8, memory_space.get(), file_space.get(),
                   H5P_DEFAULT, out) >= 0,
           "data: ", path, ": dataset ", name, ": read of images [", first, ", ", first + count,
           ") failed (truncated or corrupt file?)");
}

void write_hdf5_dataset(const std::string& path, const Dataset& data, int gzip_level) {
  RT_CHECK(gzip_level >= 0 && gzip_level <= 9, "data: gzip level must be 0-9, got ", gzip_level);
  write_hdf5_atomically(path, [&](hid_t file) {
    write_split(file, "train", data.train, gzip_level);
    write_split(file, "test", data.test, gzip_level);
    write_class_names(file, data.class_names);
  });
}

}  // namespace ringtrain
