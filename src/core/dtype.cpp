#include "ringtrain/core/dtype.hpp"

namespace ringtrain {

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32:
      return 4;
    case DType::f64:
      return 8;
    case DType::bf16:
      return 2;
    case DType::f16:
      return 2;
    case DType::u8:
      return 1;
    case DType::i32:
      return 4;
  }
  return 0;
}

std::string dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::f64:
      return "f64";
    case DType::bf16:
      return "bf16";
    case DType::f16:
      return "f16";
    case DType::u8:
      return "u8";
    case DType::i32:
      return "i32";
  }
  return "?";
}

}  // namespace ringtrain
