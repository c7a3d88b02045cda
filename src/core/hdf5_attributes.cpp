#include "ringtrain/core/hdf5_attributes.hpp"

#include <algorithm>

#include "ringtrain/core/error.hpp"
#include "ringtrain/core/hdf5_file.hpp"

namespace ringtrain {
namespace {

using Handle = Hdf5Handle;

// Note: HDF5 keeps an attribute in its object's header, whose messages hold at most 64 KiB: a
// variable-length text takes 16 bytes there, so some 4,090 texts fit. A longer list is written
// as a 1-D dataset of the same name instead (the dense attribute storage that would hold it needs
// the 1.8 file format, whose superblock checksum H5Fget_file_image leaves stale).
constexpr size_t kMaxTextsInAttribute = 4000;

Handle utf8_text_type(const std::string& what) {
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  hdf5_check(type.get(), what + "H5Tcopy");
  hdf5_check(H5Tset_size(type.get(), H5T_VARIABLE), what + "H5Tset_size");
  hdf5_check(H5Tset_cset(type.get(), H5T_CSET_UTF8), what + "H5Tset_cset");
  return type;
}

// An empty vector is an attribute of zero elements (HDF5 refuses to write from no buffer).
void write_attribute(hid_t object, const std::string& name, hid_t file_type, hid_t memory_type,
                     hid_t space, const void* values, size_t count, const std::string& what) {
  Handle attr(H5Acreate2(object, name.c_str(), file_type, space, H5P_DEFAULT, H5P_DEFAULT),
              H5Aclose);
  hdf5_check(attr.get(), what + "H5Acreate2");
  if (count > 0) hdf5_check(H5Awrite(attr.get(), memory_type, values), what + "H5Awrite");
  attr.close(what + "H5Aclose");
}

Handle vector_space(size_t n, const std::string& what) {
  const hsize_t dims = n;
  Handle space(H5Screate_simple(1, &dims, nullptr), H5Sclose);
  hdf5_check(space.get(), what + "H5Screate_simple");
  return space;
}

// A C string memory type of the file type's character set (and size and padding, when fixed).
Handle string_memory_type(hid_t file_type, bool variable, const std::string& what) {
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  const H5T_cset_t cset = H5Tget_cset(file_type);
  RT_CHECK(type.ok() && cset != H5T_CSET_ERROR && H5Tset_cset(type.get(), cset) >= 0, what,
           "cannot make the memory string type (H5Tcopy, H5Tget_cset, H5Tset_cset)");
  if (variable) {
    hdf5_check(H5Tset_size(type.get(), H5T_VARIABLE), what + "H5Tset_size");
    return type;
  }
  const H5T_str_t pad = H5Tget_strpad(file_type);
  RT_CHECK(pad != H5T_STR_ERROR && H5Tset_size(type.get(), H5Tget_size(file_type)) >= 0 &&
               H5Tset_strpad(type.get(), pad) >= 0,
           what, "cannot make the memory string type (H5Tget_strpad, H5Tset_size, H5Tset_strpad)");
  return type;
}

// Reads the whole of an attribute or (`dataset`) a dataset as `type`.
void read_whole(hid_t object, bool dataset, hid_t type, void* out, const std::string& what) {
  const herr_t status = dataset ? H5Dread(object, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out)
                                : H5Aread(object, type, out);
  RT_CHECK(status >= 0, what, "read failed (", dataset ? "H5Dread" : "H5Aread", ")");
}

std::vector<std::string> read_variable_strings(hid_t object, bool dataset, hid_t file_type,
                                               hid_t space, size_t count, const std::string& what) {
  Handle type = string_memory_type(file_type, true, what);
  std::vector<char*> raw(count, nullptr);
  read_whole(object, dataset, type.get(), raw.data(), what);
  std::vector<std::string> texts;
  for (const char* text : raw) texts.emplace_back(text ? text : "");
  hdf5_check(H5Dvlen_reclaim(type.get(), space, H5P_DEFAULT, raw.data()), what + "H5Dvlen_reclaim");
  return texts;
}

// Fixed-length strings lose their padding: what follows the first NUL, and trailing spaces of
// space-padded ones.
std::vector<std::string> read_fixed_strings(hid_t object, bool dataset, hid_t file_type,
                                            size_t count, const std::string& what) {
  Handle type = string_memory_type(file_type, false, what);
  const size_t size = H5Tget_size(type.get());
  RT_CHECK(size > 0, what, "H5Tget_size failed");
  std::vector<char> raw(count * size);
  read_whole(object, dataset, type.get(), raw.data(), what);
  std::vector<std::string> texts;
  for (size_t i = 0; i < count; ++i) {
    std::string text(raw.data() + i * size, size);
    text.resize(std::min(text.find('\0'), text.size()));
    if (H5Tget_strpad(type.get()) == H5T_STR_SPACEPAD) text.erase(text.find_last_not_of(' ') + 1);
    texts.push_back(std::move(text));
  }
  return texts;
}

Handle open_existing(hid_t object, const std::string& name, const std::string& what) {
  RT_CHECK(has_attribute(object, name, what), what, "missing");
  Handle attr(H5Aopen(object, name.c_str(), H5P_DEFAULT), H5Aclose);
  hdf5_check(attr.get(), what + "H5Aopen");
  return attr;
}

// An open attribute, its type, space and element count (scalar or 1-D only).
struct OpenAttribute {
  OpenAttribute(hid_t object, const std::string& name, const std::string& what)
      : attr(open_existing(object, name, what)),
        type(H5Aget_type(attr.get()), H5Tclose),
        space(H5Aget_space(attr.get()), H5Sclose) {
    hdf5_check(type.get(), what + "H5Aget_type");
    hdf5_check(space.get(), what + "H5Aget_space");
    const int rank = H5Sget_simple_extent_ndims(space.get());
    RT_CHECK(rank == 0 || rank == 1, what, "has rank ", rank, ", expected a scalar or a vector");
    const hssize_t n = H5Sget_simple_extent_npoints(space.get());
    hdf5_check(n, what + "H5Sget_simple_extent_npoints");
    count = static_cast<size_t>(n);
  }
  Handle attr, type, space;
  size_t count = 0;
};

template <class T>
hid_t native_type();
template <>
hid_t native_type<int64_t>() {
  return H5T_NATIVE_INT64;
}
template <>
hid_t native_type<uint64_t>() {
  return H5T_NATIVE_UINT64;
}
template <>
hid_t native_type<double>() {
  return H5T_NATIVE_DOUBLE;
}

template <class T>
void write_scalar(hid_t object, const std::string& name, T value, const std::string& what) {
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  hdf5_check(space.get(), what + "H5Screate");
  write_attribute(object, name, native_type<T>(), native_type<T>(), space.get(), &value, 1, what);
}

}  // namespace

void write_number_attribute(hid_t object, const std::string& name, int64_t value,
                            const std::string& what) {
  write_scalar(object, name, value, what);
}

void write_number_attribute(hid_t object, const std::string& name, uint64_t value,
                            const std::string& what) {
  write_scalar(object, name, value, what);
}

void write_number_attribute(hid_t object, const std::string& name, double value,
                            const std::string& what) {
  write_scalar(object, name, value, what);
}

template <class T>
T read_number_attribute(hid_t object, const std::string& name, const std::string& what) {
  const OpenAttribute a(object, name, what);
  RT_CHECK(a.count == 1, what, "holds ", a.count, " values, expected one");
  T value{};
  RT_CHECK(H5Aread(a.attr.get(), native_type<T>(), &value) >= 0, what, "read failed (H5Aread)");
  return value;
}
template int64_t read_number_attribute<int64_t>(hid_t, const std::string&, const std::string&);
template uint64_t read_number_attribute<uint64_t>(hid_t, const std::string&, const std::string&);
template double read_number_attribute<double>(hid_t, const std::string&, const std::string&);

void write_text_attribute(hid_t object, const std::string& name, const std::string& value,
                          const std::string& what) {
  Handle type = utf8_text_type(what);
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  hdf5_check(space.get(), what + "H5Screate");
  const char* raw = value.c_str();
  write_attribute(object, name, type.get(), type.get(), space.get(), &raw, 1, what);
}

void write_texts_attribute(hid_t object, const std::string& name,
                           const std::vector<std::string>& values, const std::string& what) {
  Handle type = utf8_text_type(what);
  Handle space = vector_space(values.size(), what);
  std::vector<const char*> raw;
  for (const std::string& v : values) raw.push_back(v.c_str());
  if (values.size() <= kMaxTextsInAttribute) {
    write_attribute(object, name, type.get(), type.get(), space.get(), raw.data(), raw.size(),
                    what);
    return;
  }
  Handle dataset(H5Dcreate2(object, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT,
                            H5P_DEFAULT),
                 H5Dclose);
  hdf5_check(dataset.get(), what + "H5Dcreate2");
  hdf5_check(H5Dwrite(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.data()),
             what + "H5Dwrite");
  dataset.close(what + "H5Dclose");
}

bool has_text_list(hid_t object, const std::string& name, const std::string& what) {
  if (has_attribute(object, name, what)) return true;
  const htri_t link = H5Lexists(object, name.c_str(), H5P_DEFAULT);
  hdf5_check(link, what + "H5Lexists");
  return link > 0;
}

TextList open_text_list(hid_t object, const std::string& name, const std::string& what) {
  const bool dataset = !has_attribute(object, name, what);
  Handle id = dataset ? Handle(H5Dopen2(object, name.c_str(), H5P_DEFAULT), H5Dclose)
                      : Handle(H5Aopen(object, name.c_str(), H5P_DEFAULT), H5Aclose);
  hdf5_check(id.get(), what + (dataset ? "H5Dopen2" : "H5Aopen"));
  Handle type(dataset ? H5Dget_type(id.get()) : H5Aget_type(id.get()), H5Tclose);
  hdf5_check(type.get(), what + (dataset ? "H5Dget_type" : "H5Aget_type"));
  Handle space(dataset ? H5Dget_space(id.get()) : H5Aget_space(id.get()), H5Sclose);
  hdf5_check(space.get(), what + (dataset ? "H5Dget_space" : "H5Aget_space"));
  return TextList{dataset, std::move(id), std::move(type), std::move(space)};
}

void write_numbers_attribute(hid_t object, const std::string& name,
                             const std::vector<double>& values, const std::string& what) {
  Handle space = vector_space(values.size(), what);
  write_attribute(object, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, space.get(), values.data(),
                  values.size(), what);
}

bool has_attribute(hid_t object, const std::string& name, const std::string& what) {
  const htri_t exists = H5Aexists(object, name.c_str());
  hdf5_check(exists, what + "H5Aexists");
  return exists > 0;
}

std::vector<std::string> read_string_values(hid_t object, hid_t file_type, hid_t space,
                                            size_t count, const std::string& what, bool dataset) {
  const htri_t variable = H5Tis_variable_str(file_type);
  hdf5_check(variable, what + "H5Tis_variable_str");
  return variable ? read_variable_strings(object, dataset, file_type, space, count, what)
                  : read_fixed_strings(object, dataset, file_type, count, what);
}

std::vector<std::string> read_texts_attribute(hid_t object, const std::string& name,
                                              const std::string& what) {
  const OpenAttribute a(object, name, what);
  RT_CHECK(H5Tget_class(a.type.get()) == H5T_STRING, what, "is not text");
  if (a.count == 0) return {};
  return read_string_values(a.attr.get(), a.type.get(), a.space.get(), a.count, what);
}

std::vector<std::string> read_text_list(hid_t object, const std::string& name,
                                        const std::string& what) {
  RT_CHECK(has_text_list(object, name, what), what, "missing");
  const TextList list = open_text_list(object, name, what);
  RT_CHECK(H5Tget_class(list.type.get()) == H5T_STRING, what, "is not text");
  const hssize_t n = H5Sget_simple_extent_npoints(list.space.get());
  hdf5_check(n, what + "H5Sget_simple_extent_npoints");
  if (n == 0) return {};
  return read_string_values(list.id.get(), list.type.get(), list.space.get(),
                            static_cast<size_t>(n), what, list.is_dataset);
}

std::vector<double> read_numbers_attribute(hid_t object, const std::string& name,
                                           const std::string& what) {
  const OpenAttribute a(object, name, what);
  const H5T_class_t kind = H5Tget_class(a.type.get());
  RT_CHECK(kind == H5T_FLOAT || kind == H5T_INTEGER, what, "is not numeric");
  std::vector<double> values(a.count);
  if (a.count == 0) return values;
  RT_CHECK(H5Aread(a.attr.get(), H5T_NATIVE_DOUBLE, values.data()) >= 0, what,
           "read failed (H5Aread)");
  return values;
}

}  // namespace ringtrain
