#include "ringtrain/core/tensor.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "ringtrain/core/checked_math.hpp"

namespace ringtrain {

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n = checked_mul(n, d, "tensor elements");
  return n;
}

template <>
const NameTable<DeviceKind>& names_of<DeviceKind>() {
  static const NameTable<DeviceKind> names = {{"cpu", DeviceKind::cpu}, {"cuda", DeviceKind::cuda}};
  return names;
}

std::string DeviceId::str() const {
  return kind == DeviceKind::cpu ? "cpu" : "cuda:" + std::to_string(index);
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Layout layout) {
  for (int64_t d : shape)
    RT_CHECK(d >= 0, "Tensor::zeros: negative dimension in ", shape_str(shape));
  const std::size_t bytes = static_cast<std::size_t>(
      checked_mul(shape_numel(shape), static_cast<int64_t>(dtype_size(dtype)), "tensor bytes"));
  const std::size_t rounded = std::max<std::size_t>(256, (bytes + 255) / 256 * 256);
  void* p = std::aligned_alloc(256, rounded);
  RT_CHECK(p != nullptr, "Tensor::zeros: cannot allocate ", bytes, " bytes for ", shape_str(shape));
  std::memset(p, 0, rounded);
  return adopt(std::shared_ptr<void>(p, std::free), shape, dtype, DeviceId{}, layout);
}

Tensor Tensor::adopt(std::shared_ptr<void> storage, const Shape& shape, DType dtype,
                     DeviceId device, Layout layout) {
  Tensor t = view(storage.get(), shape, dtype, device, layout);
  t.storage_ = std::move(storage);
  return t;
}

Tensor Tensor::view(void* data, const Shape& shape, DType dtype, DeviceId device, Layout layout) {
  Tensor t;
  t.data_ = data;
  t.shape_ = shape;
  t.dtype_ = dtype;
  t.device_ = device;
  t.layout_ = layout;
  return t;
}

Tensor Tensor::slice(int64_t offset, const Shape& shape) const {
  RT_CHECK(offset >= 0 && offset + shape_numel(shape) <= numel(), "Tensor::slice: range [", offset,
           ", ", offset + shape_numel(shape), ") outside ", describe());
  Tensor t = *this;
  t.data_ = static_cast<char*>(data_) + offset * static_cast<int64_t>(dtype_size(dtype_));
  t.shape_ = shape;
  return t;
}

Tensor Tensor::reshaped(const Shape& shape) const {
  RT_CHECK(shape_numel(shape) == numel(), "Tensor::reshaped: cannot view ", describe(), " as ",
           shape_str(shape));
  Tensor t = *this;
  t.shape_ = shape;
  return t;
}

Tensor Tensor::with_layout(Layout layout) const {
  Tensor t = *this;
  t.layout_ = layout;
  return t;
}

std::string Tensor::describe() const {
  return dtype_name(dtype_) + shape_str(shape_) + (layout_ == Layout::nchw ? " nchw " : " nhwc ") +
         device_.str();
}

void check_shape(const char* op, const char* what, const Tensor& t, const Shape& expected) {
  RT_CHECK(t.shape() == expected, op, ": expected ", what, " ", shape_str(expected), ", got ",
           t.describe());
}

void check_same_shape(const char* op, const Tensor& a, const Tensor& b) {
  RT_CHECK(a.shape() == b.shape() && a.dtype() == b.dtype(), op,
           ": operands differ: ", a.describe(), " vs ", b.describe());
}

}  // namespace ringtrain
