#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ringtrain/core/dtype.hpp"
#include "ringtrain/core/error.hpp"
#include "ringtrain/core/names.hpp"

namespace ringtrain {

using Shape = std::vector<int64_t>;
std::string shape_str(const Shape& s);
int64_t shape_numel(const Shape& s);

// Memory order of a 4-D activation. Shapes are always given in logical N,C,H,W order.
enum class Layout { nchw, nhwc };

enum class DeviceKind { cpu, cuda };
template <>
const NameTable<DeviceKind>& names_of<DeviceKind>();

// Where a tensor's memory lives.
struct DeviceId {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;
  std::string str() const;
  bool operator==(const DeviceId& o) const { return kind == o.kind && index == o.index; }
};

// A typed view onto memory. The storage is shared (owning tensors) or borrowed (views onto a
// buffer someone else keeps alive, e.g. one parameter inside the flat parameter buffer).
class Tensor {
 public:
  Tensor() = default;
  // Owning CPU tensor, 256-byte aligned (as cudaMalloc's), zero-filled.
  static Tensor zeros(const Shape& shape, DType dtype, Layout layout = Layout::nchw);
  // Owning tensor over storage allocated by a backend (the deleter lives in the shared_ptr).
  static Tensor adopt(std::shared_ptr<void> storage, const Shape& shape, DType dtype,
                      DeviceId device, Layout layout = Layout::nchw);
  // Non-owning view.
  static Tensor view(void* data, const Shape& shape, DType dtype, DeviceId device = {},
                     Layout layout = Layout::nchw);

  // View of `shape` starting `offset` elements into this tensor's memory (shares ownership).
  Tensor slice(int64_t offset, const Shape& shape) const;
  // Same memory, another shape with the same element count.
  Tensor reshaped(const Shape& shape) const;
  // Same memory, read in another layout (memory whose order the caller knows, as raw NHWC
  // images in a buffer a backend handed out).
  Tensor with_layout(Layout layout) const;

  const Shape& shape() const { return shape_; }
  int64_t dim(int i) const { return shape_.at(static_cast<size_t>(i)); }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const { return shape_numel(shape_); }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }
  DType dtype() const { return dtype_; }
  Layout layout() const { return layout_; }
  DeviceId device() const { return device_; }
  bool defined() const { return data_ != nullptr; }
  void* raw() const { return data_; }
  const std::shared_ptr<void>& shared_storage() const { return storage_; }
  std::string describe() const;  // "f32[32,64,8,8] nchw cpu"

  template <class T>
  T* data() const {
    RT_CHECK(dtype_ == dtype_of<T>(), "Tensor::data: tensor is ", describe(), ", asked for ",
             dtype_name(dtype_of<T>()));
    return static_cast<T*>(data_);
  }

 private:
  std::shared_ptr<void> storage_;
  void* data_ = nullptr;
  Shape shape_;
  DType dtype_ = DType::f32;
  Layout layout_ = Layout::nchw;
  DeviceId device_;
};

// Throws "op: expected <what> <shape>, got <shape>" when shapes differ.
void check_shape(const char* op, const char* what, const Tensor& t, const Shape& expected);
void check_same_shape(const char* op, const Tensor& a, const Tensor& b);

}  // namespace ringtrain
