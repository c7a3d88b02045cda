#include "ringtrain/optim/loss_scaler.hpp"

#include <algorithm>

#include "ringtrain/core/error.hpp"

namespace ringtrain {

LossScaler::LossScaler(bool enabled, double initial_scale, int growth_interval)
    : enabled_(enabled), scale_(initial_scale), growth_interval_(growth_interval) {
  RT_CHECK(initial_scale > 0, "LossScaler: initial scale must be positive, got ", initial_scale);
  RT_CHECK(growth_interval > 0, "LossScaler: growth interval must be positive, got ",
           growth_interval);
}

void LossScaler::restore(double scale, int clean_steps) {
  RT_CHECK(scale > 0 && clean_steps >= 0, "LossScaler: cannot restore scale ", scale, " after ",
           clean_steps, " clean steps");
  scale_ = scale;
  clean_steps_ = clean_steps;
}

// Note: the finite check runs on the all-reduced gradients, where an inf or NaN of any rank
// reaches every rank, so all ranks skip or take the same steps and the scale stays the same
// everywhere without communication of its own. A skipped step still counts as a step (the
// schedule and the data move on), as in PyTorch's GradScaler; the first steps of an fp16 run
// are often skipped while the scale falls from 65536 to what the gradients allow.
bool LossScaler::update(bool gradients_finite) {
  if (!enabled_) return true;
  if (!gradients_finite) {
    // Halving below 1 would only shrink gradients that already overflow at scale 1.
    scale_ = std::max(1.0, scale_ / 2);
    clean_steps_ = 0;
    ++skipped_;
    return false;
  }
  if (++clean_steps_ == growth_interval_) {
    scale_ = std::min(scale_ * 2, 16777216.0);  // 2^24: fp16's range gives nothing above
    clean_steps_ = 0;
  }
  return true;
}

}  // namespace ringtrain
