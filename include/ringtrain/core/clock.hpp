#pragma once
#include <chrono>

namespace ringtrain {

using Clock = std::chrono::steady_clock;

// Seconds from t to now on the steady clock.
inline double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace ringtrain
