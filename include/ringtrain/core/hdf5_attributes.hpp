#pragma once
// Attributes of an HDF5 object (a file's root, a group) in the types h5py writes and reads:
// text as variable-length UTF-8, numbers as float64 vectors. Every error starts with `what`
// (e.g. "checkpoint: run/ckpt.h5: attribute norm_mean: ") and names the failing HDF5 call.
#include <hdf5.h>

#include <string>
#include <vector>

#include "ringtrain/core/hdf5_file.hpp"

namespace ringtrain {

// Scalar text.
void write_text_attribute(hid_t object, const std::string& name, const std::string& value,
                          const std::string& what);
// A [n] vector of texts: an attribute while it fits one (4,000 texts), else a 1-D dataset of the
// same name beside the object's attributes. read_text_list reads either.
void write_texts_attribute(hid_t object, const std::string& name,
                           const std::vector<std::string>& values, const std::string& what);
// A scalar number, stored in the type of `value`: int64, uint64 or float64.
void write_number_attribute(hid_t object, const std::string& name, int64_t value,
                            const std::string& what);
void write_number_attribute(hid_t object, const std::string& name, uint64_t value,
                            const std::string& what);
void write_number_attribute(hid_t object, const std::string& name, double value,
                            const std::string& what);
// A scalar number attribute read as T (int64_t, uint64_t or double), converted by HDF5 from
// the stored type; throws naming it (`what`) when it is missing, not a scalar, or unreadable.
template <class T>
T read_number_attribute(hid_t object, const std::string& name, const std::string& what);
// A [n] float64 vector.
void write_numbers_attribute(hid_t object, const std::string& name,
                             const std::vector<double>& values, const std::string& what);

// Whether the attribute exists (throws when HDF5 cannot tell).
bool has_attribute(hid_t object, const std::string& name, const std::string& what);

// The strings of an open string attribute of `count` elements, in any HDF5 string type:
// variable or fixed length (padding dropped), ASCII or UTF-8.
// `dataset`: `object` is a dataset, not an attribute.
std::vector<std::string> read_string_values(hid_t object, hid_t file_type, hid_t space,
                                            size_t count, const std::string& what,
                                            bool dataset = false);
// A string attribute, scalar or 1-D, as its strings.
std::vector<std::string> read_texts_attribute(hid_t object, const std::string& name,
                                              const std::string& what);
// Whether `object` has a text list `name`, as an attribute or a dataset.
bool has_text_list(hid_t object, const std::string& name, const std::string& what);

// A text list open for reading: the attribute or dataset, its type and its space.
struct TextList {
  bool is_dataset;
  Hdf5Handle id, type, space;
};
TextList open_text_list(hid_t object, const std::string& name, const std::string& what);

// The texts write_texts_attribute wrote (an attribute or a dataset), in any HDF5 string type.
std::vector<std::string> read_text_list(hid_t object, const std::string& name,
                                        const std::string& what);

// A numeric attribute, scalar or 1-D, converted to float64.
std::vector<double> read_numbers_attribute(hid_t object, const std::string& name,
                                           const std::string& what);

}  // namespace ringtrain
