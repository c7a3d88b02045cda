#include "ringtrain/checkpoint/loaded_values.hpp"

#include <fmt/format.h>

#include <cmath>

#include "ringtrain/core/error.hpp"

namespace ringtrain {
namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

// What is wrong with `v` as a value of tensor `name`; nullptr when nothing is.
const char* value_problem(const std::string& name, float v) {
  if (!std::isfinite(v)) return "not a finite number";
  if (v < 0 && ends_with(name, "running_var")) return "a negative batch-norm running variance";
  if (v < 0 && starts_with(name, "/optimizer/exp_avg_sq/"))
    return "a negative second moment (an average of squares)";
  if (std::fabs(v) >= 0x1p64f && starts_with(name, "/optimizer/exp_avg/"))
    return "a first moment larger than any average of gradients with finite squares";
  return nullptr;
}

}  // namespace

std::string loaded_values_problem(const std::string& name, const float* values, size_t count) {
  for (size_t i = 0; i < count; ++i)
    if (const char* problem = value_problem(name, values[i]))
      return str_cat("tensor ", name, " holds ", fmt::format("{}", values[i]), " at index ", i,
                     " of ", count, ", ", problem);
  return "";
}

void check_loaded_values(const std::string& file, const std::string& name, const float* values,
                         size_t count) {
  const std::string problem = loaded_values_problem(name, values, count);
  RT_CHECK(problem.empty(), file, ": ", problem,
           ": the file is corrupt, or was written from a run that had diverged; load an earlier "
           "checkpoint of the run, or export one again");
}

}  // namespace ringtrain
