#include "ringtrain/checkpoint/loaded_values.hpp"

#include <fmt/format.h>

#include <cmath>

#include "ringtrain/core/error.hpp"

namespace ringtrain {

void check_loaded_values(const std::string& file, const std::string& name, const float* values,
                         size_t count) {
  const std::string suffix = "running_var";
  const bool variance = name.size() >= suffix.size() &&
                        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  for (size_t i = 0; i < count; ++i) {
    const float v = values[i];
    if (std::isfinite(v) && !(variance && v < 0)) continue;
    throw Error(str_cat(
        file, ": tensor ", name, " holds ", fmt::format("{}", v), " at index ", i, " of ", count,
        std::isfinite(v) ? ", a negative batch-norm running variance" : ", not a finite number",
        ": the file is corrupt, or was written from a run that had diverged; load an earlier "
        "checkpoint of the run, or export one again"));
  }
}

}  // namespace ringtrain
