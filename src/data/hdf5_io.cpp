#include "ringtrain/data/hdf5_io.hpp"

#include <fcntl.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "ringtrain/core/class_names.hpp"
#include "ringtrain/core/error.hpp"
#include "ringtrain/core/hdf5_attributes.hpp"
#include "ringtrain/core/hdf5_file.hpp"
#include "ringtrain/core/input_file.hpp"
#include "ringtrain/core/temporary_file.hpp"

namespace ringtrain {
namespace {

using Handle = Hdf5Handle;

std::string dims_str(const std::vector<hsize_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

// The prefix of every error about one dataset of the file.
std::string where(const std::string& path, const std::string& dataset) {
  return str_cat("data: ", path, ": dataset ", dataset, ": ");
}

std::vector<hsize_t> dims_of_space(hid_t space, const std::string& what) {
  const int rank = H5Sget_simple_extent_ndims(space);
  RT_CHECK(rank >= 0, what, "H5Sget_simple_extent_ndims failed");
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  RT_CHECK(H5Sget_simple_extent_dims(space, dims.data(), nullptr) == rank, what,
           "H5Sget_simple_extent_dims failed");
  return dims;
}

std::vector<hsize_t> dims_of(hid_t dataset, const std::string& what) {
  Handle space(H5Dget_space(dataset), H5Sclose);
  RT_CHECK(space.ok(), what, "H5Dget_space failed");
  return dims_of_space(space.get(), what);
}

// A data type in words, for errors about what a file holds.
std::string type_str(hid_t type) {
  const std::string bits = std::to_string(8 * H5Tget_size(type));
  switch (H5Tget_class(type)) {
    case H5T_INTEGER:
      return (H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int") + bits;
    case H5T_FLOAT:
      return "float" + bits;
    case H5T_STRING:
      return "strings";
    case H5T_COMPOUND:
      return "compound";
    case H5T_ENUM:
      return "enum";
    case H5T_VLEN:
      return "variable-length sequences";
    case H5T_ARRAY:
      return "arrays";
    case H5T_REFERENCE:
      return "references";
    default:
      return "an unsupported type";
  }
}

// Names of the registered HDF5 filters a data file is likely to use.
std::string filter_name(H5Z_filter_t id, const char* stored) {
  switch (id) {
    case H5Z_FILTER_DEFLATE:
      return "gzip";
    case H5Z_FILTER_SZIP:
      return "szip";
    case 307:
      return "bzip2";
    case 32000:
      return "LZF";
    case 32001:
      return "Blosc";
    case 32004:
      return "LZ4";
    case 32008:
      return "bitshuffle";
    case 32013:
      return "zfp";
    case 32015:
      return "Zstandard";
    case 32026:
      return "Blosc2";
    default:
      return stored[0] ? stored : "unregistered";
  }
}

// Note: an optional filter unavailable when the file was written is skipped and marked so in
// each chunk's filter mask; such a file reads without it. The first chunk tells which.
bool first_chunk_needs(hid_t dataset, unsigned filter, const std::string& what) {
  Handle space(H5Dget_space(dataset), H5Sclose);
  RT_CHECK(space.ok(), what, "H5Dget_space failed");
  hsize_t chunks = 0;
  RT_CHECK(H5Dget_num_chunks(dataset, space.get(), &chunks) >= 0, what, "H5Dget_num_chunks failed");
  if (chunks == 0) return false;
  unsigned mask = 0;
  RT_CHECK(H5Dget_chunk_info(dataset, space.get(), 0, nullptr, &mask, nullptr, nullptr) >= 0, what,
           "H5Dget_chunk_info failed");
  return (mask & (1u << filter)) == 0;
}

// Refuses a dataset compressed with a filter this HDF5 library lacks, which would otherwise
// fail at the first read with HDF5's generic error.
void check_filters(hid_t dataset, hid_t dcpl, const std::string& path, const std::string& name) {
  const std::string what = where(path, name);
  const int count = H5Pget_nfilters(dcpl);
  RT_CHECK(count >= 0, what, "H5Pget_nfilters failed");
  for (int i = 0; i < count; ++i) {
    unsigned flags = 0, config = 0;
    size_t values = 0;
    char stored[64] = "";
    const H5Z_filter_t id = H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &values, nullptr,
                                           sizeof stored, stored, &config);
    RT_CHECK(id >= 0, what, "H5Pget_filter2 of filter ", i, " failed");
    const htri_t available = H5Zfilter_avail(id);
    RT_CHECK(available >= 0, what, "H5Zfilter_avail(", id, ") failed");
    if (available > 0) continue;
    if ((flags & H5Z_FLAG_OPTIONAL) && !first_chunk_needs(dataset, static_cast<unsigned>(i), what))
      continue;
    throw Error(str_cat(
        "data: ", path, ": dataset ", name, " needs HDF5 filter ", id, " (",
        filter_name(id, stored),
        "), which this HDF5 library lacks: rewrite the file with gzip or no compression "
        "(h5repack -f NONE ",
        path, " OUT.h5, where the filter is installed) or put its plugin on HDF5_PLUGIN_PATH"));
  }
}

// Refuses a dataset whose storage, or some of whose chunks, were never written: HDF5 reads
// them as the fill value (zeros), so a half-written file would train on blank images.
void check_written(hid_t dataset, hid_t dcpl, const std::vector<hsize_t>& dims,
                   const std::string& what) {
  const H5D_layout_t layout = H5Pget_layout(dcpl);
  RT_CHECK(layout >= 0, what, "H5Pget_layout failed");
  if (layout != H5D_CONTIGUOUS && layout != H5D_CHUNKED) return;
  H5D_space_status_t status{};
  RT_CHECK(H5Dget_space_status(dataset, &status) >= 0, what, "H5Dget_space_status failed");
  const char* remedy = " (it would read as zeros): the file is incomplete; write it again";
  RT_CHECK(status != H5D_SPACE_STATUS_NOT_ALLOCATED, what, "never written", remedy);
  if (layout != H5D_CHUNKED) return;
  const int rank = static_cast<int>(dims.size());
  std::vector<hsize_t> chunk(dims.size());
  RT_CHECK(H5Pget_chunk(dcpl, rank, chunk.data()) == rank, what, "H5Pget_chunk failed");
  hsize_t expected = 1;
  for (size_t d = 0; d < dims.size(); ++d) expected *= (dims[d] + chunk[d] - 1) / chunk[d];
  Handle space(H5Dget_space(dataset), H5Sclose);
  hsize_t written = 0;
  RT_CHECK(space.ok() && H5Dget_num_chunks(dataset, space.get(), &written) >= 0, what,
           "H5Dget_num_chunks failed");
  RT_CHECK(written >= expected, what, expected - written, " of ", expected,
           " chunks were never written", remedy);
}

// Refuses what would read wrongly: a filter this library lacks, storage never written.
void check_storage(hid_t dataset, const std::string& path, const std::string& name,
                   const std::vector<hsize_t>& dims) {
  Handle dcpl(H5Dget_create_plist(dataset), H5Pclose);
  RT_CHECK(dcpl.ok(), where(path, name), "H5Dget_create_plist failed");
  check_filters(dataset, dcpl.get(), path, name);
  check_written(dataset, dcpl.get(), dims, where(path, name));
}

// Whether every link on an absolute path exists (H5Lexists fails on a missing parent).
bool link_exists(hid_t file, const std::string& name) {
  for (size_t slash = name.find('/', 1);; slash = name.find('/', slash + 1)) {
    if (H5Lexists(file, name.substr(0, slash).c_str(), H5P_DEFAULT) <= 0) return false;
    if (slash == std::string::npos) return true;
  }
}

Handle open_dataset(hid_t file, const std::string& path, const std::string& name,
                    const char* expected) {
  RT_CHECK(link_exists(file, name), where(path, name), "missing (expected ", expected, ")");
  Handle dataset(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
  RT_CHECK(dataset.ok(), where(path, name), "cannot be opened");
  return dataset;
}

// Opens and validates one split (rank, dims, dtypes, storage) and reads its labels, and its
// images when load_images is set.
Split read_split(hid_t file, const std::string& path, const std::string& name, bool load_images) {
  const std::string images_name = "/" + name + "/images", labels_name = "/" + name + "/labels";
  Handle images = open_dataset(file, path, images_name, "uint8 [N,H,W,C]");
  Handle labels = open_dataset(file, path, labels_name, "integer [N]");
  const auto idims = dims_of(images.get(), where(path, images_name));
  const auto ldims = dims_of(labels.get(), where(path, labels_name));
  RT_CHECK(idims.size() == 4, where(path, images_name), "expected rank 4 [N,H,W,C], got ",
           dims_str(idims));
  RT_CHECK(idims[3] == 1 || idims[3] == 3, where(path, images_name),
           "expected 1 or 3 channels, got ", dims_str(idims));
  RT_CHECK(idims[0] > 0 && idims[1] > 0 && idims[2] > 0, where(path, images_name), "empty split ",
           dims_str(idims));
  RT_CHECK(ldims.size() == 1, where(path, labels_name), "expected rank 1 [N], got ",
           dims_str(ldims));
  RT_CHECK(ldims[0] == idims[0], where(path, labels_name), dims_str(ldims), " labels for ",
           idims[0], " images");

  Handle itype(H5Dget_type(images.get()), H5Tclose), ltype(H5Dget_type(labels.get()), H5Tclose);
  RT_CHECK(itype.ok() && H5Tget_class(itype.get()) == H5T_INTEGER &&
               H5Tget_size(itype.get()) == 1 && H5Tget_sign(itype.get()) == H5T_SGN_NONE,
           where(path, images_name), "expected uint8 pixels");
  RT_CHECK(ltype.ok() && H5Tget_class(ltype.get()) == H5T_INTEGER, where(path, labels_name),
           "expected integer labels");
  check_storage(images.get(), path, images_name, idims);
  check_storage(labels.get(), path, labels_name, ldims);

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
             where(path, images_name), "read failed (truncated or corrupt file?)");
  }
  RT_CHECK(
      H5Dread(labels.get(), H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, s.labels.data()) >= 0,
      where(path, labels_name), "read failed (truncated or corrupt file?)");
  return s;
}

// The file's `classes`, one name per class: an attribute (or a dataset, for a list too long for
// one), in any HDF5 string type: variable or fixed length, ASCII or UTF-8 (h5py writes
// variable-length UTF-8). Empty when absent.
std::vector<std::string> read_class_names(hid_t file, const std::string& path) {
  const std::string what = str_cat("data: ", path, ": attribute classes: ");
  if (!has_text_list(file, "classes", what)) return {};
  const TextList list = open_text_list(file, "classes", what);
  const auto dims = dims_of_space(list.space.get(), what);
  RT_CHECK(H5Tget_class(list.type.get()) == H5T_STRING && dims.size() == 1, what, "holds ",
           type_str(list.type.get()), " ", dims_str(dims),
           ", expected strings [classes] (one name per class)");
  RT_CHECK(dims[0] > 0 && dims[0] <= static_cast<hsize_t>(kMaxClasses), what, "holds ", dims[0],
           " names, expected 1 to ", kMaxClasses);
  std::vector<std::string> names =
      read_string_values(list.id.get(), list.type.get(), list.space.get(),
                         static_cast<size_t>(dims[0]), what, list.is_dataset);
  for (size_t i = 0; i < names.size(); ++i)
    check_class_name(names[i], str_cat(what, "name ", i),
                     "write the file's class names as UTF-8 text, one line each");
  check_distinct_class_names(names, str_cat(what, "names"), "give each class its own name");
  return names;
}

// Every scalar string attribute of the file, by name, in name order (the provenance records).
std::vector<std::pair<std::string, std::string>> read_text_attributes(hid_t file,
                                                                      const std::string& path) {
  std::vector<std::string> names;
  const auto collect = [](hid_t, const char* name, const H5A_info_t*, void* out) -> herr_t {
    static_cast<std::vector<std::string>*>(out)->emplace_back(name);
    return 0;
  };
  RT_CHECK(H5Aiterate2(file, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect, &names) >= 0,
           "data: ", path, ": listing the file's attributes failed (H5Aiterate2)");
  std::vector<std::pair<std::string, std::string>> texts;
  for (const std::string& name : names) {
    const std::string what = str_cat("data: ", path, ": attribute ", name, ": ");
    Handle attr(H5Aopen(file, name.c_str(), H5P_DEFAULT), H5Aclose);
    RT_CHECK(attr.ok(), what, "cannot be opened (H5Aopen)");
    Handle type(H5Aget_type(attr.get()), H5Tclose), space(H5Aget_space(attr.get()), H5Sclose);
    RT_CHECK(type.ok() && space.ok(), what, "H5Aget_type or H5Aget_space failed");
    if (H5Tget_class(type.get()) != H5T_STRING ||
        H5Sget_simple_extent_type(space.get()) != H5S_SCALAR)
      continue;
    texts.emplace_back(name, read_string_values(attr.get(), type.get(), space.get(), 1, what)[0]);
  }
  return texts;
}

// class0 .. classK for K the largest train label, for a file without `classes`.
std::vector<std::string> default_class_names(const Split& train, const std::string& path) {
  const auto largest = std::max_element(train.labels.begin(), train.labels.end());
  const int32_t max_label = largest == train.labels.end() ? 0 : *largest;
  RT_CHECK(max_label < kMaxClasses, where(path, "/train/labels"), "label ", max_label, " at index ",
           largest - train.labels.begin(), " is beyond the limit of ", kMaxClasses,
           " classes (labels 0-", kMaxClasses - 1,
           "): a corrupt label? Without a classes attribute the class count is the largest "
           "label + 1");
  std::vector<std::string> names;
  for (int i = 0; i <= max_label; ++i) names.push_back("class" + std::to_string(i));
  return names;
}

void check_labels(const Split& s, int classes, const std::string& path, const std::string& name) {
  for (int64_t i = 0; i < s.count; ++i)
    RT_CHECK(s.labels[i] >= 0 && s.labels[i] < classes, "data: ", path, ": dataset /", name,
             "/labels: label ", s.labels[i], " at index ", i, " outside [0, ", classes, ")");
}

// Note: creation properties without object times (HDF5 stores them by default), so that the
// same content always makes the same bytes.
Handle untimed_properties(hid_t property_class, const std::string& what) {
  Handle props(H5Pcreate(property_class), H5Pclose);
  RT_CHECK(props.ok() && H5Pset_obj_track_times(props.get(), false) >= 0, what,
           "H5Pcreate or H5Pset_obj_track_times failed");
  return props;
}

void write_split(hid_t file, const std::string& name, const Split& s, int gzip_level) {
  const std::string what = str_cat("data: cannot write /", name, ": ");
  Handle group_props = untimed_properties(H5P_GROUP_CREATE, what);
  Handle group(H5Gcreate2(file, ("/" + name).c_str(), H5P_DEFAULT, group_props.get(), H5P_DEFAULT),
               H5Gclose);
  RT_CHECK(group.ok(), what, "H5Gcreate2 failed");
  const hsize_t idims[4] = {static_cast<hsize_t>(s.count), static_cast<hsize_t>(s.height),
                            static_cast<hsize_t>(s.width), static_cast<hsize_t>(s.channels)};
  const hsize_t chunk[4] = {std::min<hsize_t>(1024, idims[0]), idims[1], idims[2], idims[3]};
  Handle ispace(H5Screate_simple(4, idims, nullptr), H5Sclose);
  Handle props = untimed_properties(H5P_DATASET_CREATE, what);
  RT_CHECK(ispace.ok() && H5Pset_chunk(props.get(), 4, chunk) >= 0, what,
           "H5Screate_simple or H5Pset_chunk failed for images ", dims_str({idims, idims + 4}));
  RT_CHECK(gzip_level == 0 || H5Pset_deflate(props.get(), static_cast<unsigned>(gzip_level)) >= 0,
           what, "H5Pset_deflate(", gzip_level, ") failed: this HDF5 library lacks gzip?");
  Handle images(H5Dcreate2(group.get(), "images", H5T_STD_U8LE, ispace.get(), H5P_DEFAULT,
                           props.get(), H5P_DEFAULT),
                H5Dclose);
  RT_CHECK(images.ok() && H5Dwrite(images.get(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                                   s.images.data()) >= 0,
           what, "images: H5Dcreate2 or H5Dwrite failed");
  const hsize_t ldims[1] = {static_cast<hsize_t>(s.count)};
  Handle lspace(H5Screate_simple(1, ldims, nullptr), H5Sclose);
  RT_CHECK(lspace.ok(), what, "labels: H5Screate_simple failed");
  Handle label_props = untimed_properties(H5P_DATASET_CREATE, what);
  Handle labels(H5Dcreate2(group.get(), "labels", H5T_STD_I32LE, lspace.get(), H5P_DEFAULT,
                           label_props.get(), H5P_DEFAULT),
                H5Dclose);
  RT_CHECK(labels.ok() && H5Dwrite(labels.get(), H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                                   s.labels.data()) >= 0,
           what, "labels: H5Dcreate2 or H5Dwrite failed");
}

Handle open_file(const std::string& path) {
  silence_hdf5();
  check_input_file(path, "data:", "an HDF5 file");
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
  d.class_names = read_class_names(file.get(), path);
  if (d.class_names.empty()) d.class_names = default_class_names(d.train, path);
  check_labels(d.train, d.classes(), path, "train");
  check_labels(d.test, d.classes(), path, "test");
  d.attributes = read_text_attributes(file.get(), path);
  return d;
}

void read_hdf5_images(const std::string& path, const std::string& split, int64_t first,
                      int64_t count, uint8_t* out) {
  Handle file = open_file(path);
  const std::string name = "/" + split + "/images";
  Handle images(H5Dopen2(file.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
  RT_CHECK(images.ok(), where(path, name), "cannot be opened");
  const auto dims = dims_of(images.get(), where(path, name));
  RT_CHECK(dims.size() == 4 && first >= 0 && first + count <= static_cast<int64_t>(dims[0]),
           where(path, name), "images [", first, ", ", first + count, ") outside ", dims_str(dims));
  const hsize_t start[4] = {static_cast<hsize_t>(first), 0, 0, 0};
  const hsize_t size[4] = {static_cast<hsize_t>(count), dims[1], dims[2], dims[3]};
  Handle file_space(H5Dget_space(images.get()), H5Sclose);
  Handle memory_space(H5Screate_simple(4, size, nullptr), H5Sclose);
  RT_CHECK(
      file_space.ok() && memory_space.ok() &&
          H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, size, nullptr) >= 0,
      where(path, name), "selecting images [", first, ", ", first + count,
      ") failed (H5Dget_space, H5Screate_simple or H5Sselect_hyperslab)");
  RT_CHECK(H5Dread(images.get(), H5T_NATIVE_UINT8, memory_space.get(), file_space.get(),
                   H5P_DEFAULT, out) >= 0,
           where(path, name), "read of images [", first, ", ", first + count,
           ") failed (truncated or corrupt file?)");
}

void check_output_file(const std::string& out, bool force, const std::string& what) {
  const bool stream = is_output_stream(out, OutputKinds::files_and_streams, what);
  struct stat st {};
  RT_CHECK(stream || stat(out.c_str(), &st) != 0 || force, what, out,
           ": exists: pass --force to replace it");
  const std::filesystem::path folder = std::filesystem::path(out).parent_path();
  std::error_code error;
  if (!folder.empty()) std::filesystem::create_directories(folder, error);
  RT_CHECK(!error, what, "cannot create the folder ", folder.string(), " for ", out, ": ",
           error.message());
  try {
    if (!stream) TemporaryFile probe(out);  // the folder may be written to
  } catch (const Error& e) {
    throw Error(str_cat(what, "cannot write ", out, ": ", e.what(),
                        ": choose a folder that exists and may be written"));
  }
}

void write_hdf5_dataset(const std::string& path, const Dataset& data, int gzip_level,
                        const FileAttributes& attributes) {
  RT_CHECK(gzip_level >= 0 && gzip_level <= 9, "data: gzip level must be 0-9, got ", gzip_level);
  RT_CHECK(data.classes() >= 1 && data.classes() <= kMaxClasses, "data: ", path, ": ",
           data.classes(), " class names, expected 1 to ", kMaxClasses);
  write_hdf5_atomically(path, [&](hid_t file) {
    write_split(file, "train", data.train, gzip_level);
    write_split(file, "test", data.test, gzip_level);
    const auto what = [&](const std::string& name) {
      return str_cat("data: ", path, ": cannot write attribute ", name, ": ");
    };
    write_texts_attribute(file, "classes", data.class_names, what("classes"));
    for (const auto& [name, values] : attributes.numbers)
      write_numbers_attribute(file, name, values, what(name));
    for (const auto& [name, value] : attributes.texts)
      write_text_attribute(file, name, value, what(name));
  });
}

}  // namespace ringtrain
