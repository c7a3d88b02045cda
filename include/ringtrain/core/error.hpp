#pragma once
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ringtrain {

// The one exception type of the library. Messages name the operation and the values that were
// wrong, so that a failure on one rank of a large job can be understood from its log line alone.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A setting out of range or inconsistent with another. Thrown only by checks that every rank of
// a job makes the same way before training, so one rank may report it for all.
class ConfigError : public Error {
 public:
  using Error::Error;
};

// Training diverged: a loss is NaN or infinite.
class DivergedError : public Error {
 public:
  using Error::Error;
};

template <class... Args>
std::string str_cat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}

// The texts with `separator` between them.
inline std::string join(const std::vector<std::string>& texts, const char* separator) {
  std::string all;
  for (size_t i = 0; i < texts.size(); ++i) all += (i ? separator : "") + texts[i];
  return all;
}

}  // namespace ringtrain

// RT_CHECK(cond, "op", parts...) throws Error("op: parts...") when cond is false;
// RT_CHECK_AS(ConfigError, cond, ...) throws that kind of Error instead.
#define RT_CHECK_AS(type, cond, ...)                            \
  do {                                                          \
    if (!(cond)) throw type(::ringtrain::str_cat(__VA_ARGS__)); \
  } while (0)
#define RT_CHECK(cond, ...) RT_CHECK_AS(::ringtrain::Error, cond, __VA_ARGS__)
