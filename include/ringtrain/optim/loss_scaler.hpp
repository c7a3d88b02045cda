#pragma once
#include <cstdint>

namespace ringtrain {

// Dynamic loss scaling for fp16 (PyTorch's GradScaler): the loss is multiplied by scale() so
// that small gradients survive in fp16; a step whose gradients hold an inf or a NaN is skipped
// and the scale halved; after `growth_interval` clean steps in a row the scale doubles.
class LossScaler {
 public:
  explicit LossScaler(bool enabled, double initial_scale = 65536.0, int growth_interval = 2000);

  bool enabled() const { return enabled_; }
  double scale() const { return enabled_ ? scale_ : 1.0; }
  // Records one step's outcome; returns whether the optimizer step should be taken.
  bool update(bool gradients_finite);
  int64_t skipped_steps() const { return skipped_; }
  int clean_steps() const { return clean_steps_; }
  // The state a checkpoint saved.
  void restore(double scale, int clean_steps);

 private:
  bool enabled_;
  double scale_;
  int growth_interval_;
  int clean_steps_ = 0;
  int64_t skipped_ = 0;
};

}  // namespace ringtrain
