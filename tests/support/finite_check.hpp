#pragma once
// The check every comparison helper of the unit and GPU tests makes on each element first.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

namespace ringtrain::test {

// Note: the comparison helpers fold errors with std::max, which drops a NaN (every comparison
// with it is false), so an all-NaN result would score 0 and pass any bound. Each element goes
// through this first: a value that is not finite fails the test, naming the element, and the
// helper returns infinity, which no bound accepts.
inline bool finite_or_fail(int64_t i, double got, double want) {
  if (std::isfinite(got) && std::isfinite(want)) return true;
  ADD_FAILURE() << "element " << i << " is not finite: got " << got << ", want " << want;
  return false;
}
constexpr double kNotFinite = std::numeric_limits<double>::infinity();

}  // namespace ringtrain::test
