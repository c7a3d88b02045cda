#pragma once
// The two helpers every benchmark uses: a steady-clock stopwatch and the median.
#include <algorithm>
#include <chrono>
#include <vector>

namespace ringtrain::bench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace ringtrain::bench
