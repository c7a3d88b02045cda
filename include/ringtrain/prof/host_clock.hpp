#pragma once
#include <chrono>

namespace ringtrain {

// The host's clock of a trace: seconds on the steady clock since an origin (when it was made),
// and that origin on the wall clock. Any thread may read it: the origin never changes.
class HostClock {
 public:
  HostClock();

  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - origin_).count();
  }
  // The origin on the wall clock (CLOCK_REALTIME seconds).
  double origin_unix_s() const { return origin_unix_s_; }

 private:
  std::chrono::steady_clock::time_point origin_;
  double origin_unix_s_;
};

}  // namespace ringtrain
