#pragma once
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace ringtrain {

// The one exception type of the library. Messages name the operation and the values that were
// wrong, so that a failure on one rank of a large job can be understood from its log line alone.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

template <class... Args>
std::string str_cat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}

}  // namespace ringtrain

// RT_CHECK(cond, "op", parts...) throws Error("op: parts...") when cond is false.
#define RT_CHECK(cond, ...)                                                   \
  do {                                                                        \
    if (!(cond)) throw ::ringtrain::Error(::ringtrain::str_cat(__VA_ARGS__)); \
  } while (0)
