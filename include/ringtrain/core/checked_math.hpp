#pragma once
#include <cstdint>

#include "ringtrain/core/error.hpp"

namespace ringtrain {

// Sizes computed from user input (step counts, image and tensor sizes): an Error naming `what`
// instead of a silent 64-bit overflow.
inline int64_t checked_mul(int64_t a, int64_t b, const char* what) {
  int64_t product = 0;
  RT_CHECK(!__builtin_mul_overflow(a, b, &product), what, ": ", a, " x ", b,
           " overflows a 64-bit integer");
  return product;
}

inline int64_t checked_add(int64_t a, int64_t b, const char* what) {
  int64_t sum = 0;
  RT_CHECK(!__builtin_add_overflow(a, b, &sum), what, ": ", a, " + ", b,
           " overflows a 64-bit integer");
  return sum;
}

}  // namespace ringtrain
