#pragma once
#include <cstddef>
#include <string>

namespace ringtrain {

// Element types. f64 exists for the CPU backend's numerical checks (finite differences in double).
enum class DType { f32, f64, bf16, f16, u8, i32 };

std::size_t dtype_size(DType t);
std::string dtype_name(DType t);

template <class T>
DType dtype_of();
template <>
inline DType dtype_of<float>() {
  return DType::f32;
}
template <>
inline DType dtype_of<double>() {
  return DType::f64;
}
template <>
inline DType dtype_of<unsigned char>() {
  return DType::u8;
}
template <>
inline DType dtype_of<int>() {
  return DType::i32;
}

}  // namespace ringtrain
