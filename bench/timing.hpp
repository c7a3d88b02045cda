#pragma once
// The two helpers every benchmark uses: a steady-clock stopwatch and the median.
#include <algorithm>
#include <chrono>
#include <vector>

#include "ringtrain/core/clock.hpp"

namespace ringtrain::bench {

using ringtrain::Clock;
using ringtrain::seconds_since;

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace ringtrain::bench
