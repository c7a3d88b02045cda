#include "ringtrain/prof/host_clock.hpp"

namespace ringtrain {

HostClock::HostClock()
    : origin_(std::chrono::steady_clock::now()),
      origin_unix_s_(
          std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
              .count()) {}

}  // namespace ringtrain
