#pragma once
// The safetensors file format (what torch and Hugging Face read and write): an 8-byte
// little-endian header length, a JSON header naming every tensor's dtype, shape and byte range
// (and a `__metadata__` map of texts), then the tensors' raw little-endian bytes.
#include <map>
#include <string>
#include <vector>

#include "ringtrain/core/tensor.hpp"

namespace ringtrain {

// The dtypes ringtrain writes and reads: F32 (parameters, buffers) and I64 (counters).
enum class SafeDType { f32, i64 };
const char* dtype_name(SafeDType t);  // "F32", "I64": the format's own names

struct SafeTensor {
  std::string name;
  SafeDType dtype = SafeDType::f32;
  Shape shape;              // {} for a scalar
  std::vector<char> bytes;  // numel x 4 (F32) or 8 (I64) bytes, little-endian

  int64_t numel() const { return shape_numel(shape); }
  const float* floats() const { return reinterpret_cast<const float*>(bytes.data()); }
};

struct SafeTensors {
  std::vector<SafeTensor> tensors;  // in the header's order
  std::map<std::string, std::string> metadata;

  // The tensor called `name`, or nullptr.
  const SafeTensor* find(const std::string& name) const;
};

SafeTensor f32_tensor(const std::string& name, const Shape& shape, const float* values);
SafeTensor i64_scalar(const std::string& name, int64_t value);

// Writes `file` to `path` (PATH.tmp, fsynced, renamed; every call checked). Throws an Error
// naming the file and the failing call.
void write_safetensors(const std::string& path, const SafeTensors& file);

// Reads and checks a safetensors file as the format's reference reader does: the header's
// length (at most 100 MB, within the file), its JSON (an object, starting with '{', no key twice),
// every tensor's dtype (F32 or I64, else an Error naming the tensor and its dtype), shape and
// byte range (numel x dtype bytes long), and the layout: in the order of their offsets the
// tensors lie back to back and cover the data whole (no gap, no overlap, no trailing byte).
// Throws an Error naming the file, the tensor where one is at fault, and the rule broken.
SafeTensors read_safetensors(const std::string& path);

// Whether `path` starts like a safetensors file: a header length that fits the file, then '{'.
bool is_safetensors(const std::string& path);

}  // namespace ringtrain
