#pragma once
#include <cstdint>
#include <string>

#include "ringtrain/core/names.hpp"

namespace ringtrain {

// Learning rate as a function of the optimizer step, with PyTorch's closed forms:
// constant; step (StepLR); cosine (CosineAnnealingLR to min_lr); onecycle (OneCycleLR, cosine,
// pct_start 0.3, div_factor 25, final_div_factor 1e4); poly (PolynomialLR with power 2 to 0 at
// the end, LARS's schedule in MLPerf's ResNet-50). A linear warmup from
// warmup_start_factor * lr may precede constant, step, cosine and poly (LinearLR then the
// schedule).
enum class Schedule { constant, step, cosine, onecycle, poly };
template <>
const NameTable<Schedule>& names_of<Schedule>();

struct LrSchedule {
  Schedule kind = Schedule::cosine;
  double base_lr = 0.1;
  int64_t total_steps = 1;
  int64_t warmup_steps = 0;
  double warmup_start_factor = 0.1;
  int64_t step_size = 1;  // step schedule: steps between decays
  double gamma = 0.1;     // step schedule: decay factor
  double min_lr = 0.0;    // cosine floor

  void validate() const;  // throws for inconsistent numbers
  double at(int64_t step) const;
};

}  // namespace ringtrain
