#include "ringtrain/optim/lr_schedule.hpp"

#include <algorithm>
#include <cmath>

#include "ringtrain/core/error.hpp"

namespace ringtrain {
namespace {

const double kPi = std::acos(-1.0);

// Cosine interpolation from a (pct 0) to b (pct 1).
double cosine_between(double a, double b, double pct) {
  return b + (a - b) / 2 * (1 + std::cos(kPi * pct));
}

}  // namespace

template <>
const NameTable<Schedule>& names_of<Schedule>() {
  static const NameTable<Schedule> names = {{"constant", Schedule::constant},
                                            {"step", Schedule::step},
                                            {"cosine", Schedule::cosine},
                                            {"onecycle", Schedule::onecycle},
                                            {"poly", Schedule::poly}};
  return names;
}

void LrSchedule::validate() const {
  RT_CHECK(base_lr > 0, "lr schedule: learning rate must be positive, got ", base_lr);
  RT_CHECK(total_steps > 0, "lr schedule: total steps must be positive, got ", total_steps);
  // Note: a warmup the run cannot finish is the user's setting, so a configuration error (exit 2);
  // the run's length is known only here (after the data, for --epochs).
  RT_CHECK_AS(ConfigError, warmup_steps >= 0 && warmup_steps < total_steps,
              "config: --warmup-steps ", warmup_steps, " must be shorter than the run of ",
              total_steps, " steps: lower --warmup-steps, or raise --epochs or --steps");
  RT_CHECK_AS(ConfigError, kind != Schedule::onecycle || warmup_steps == 0,
              "config: --schedule onecycle has its own warmup (30% of the run): drop "
              "--warmup-steps, or choose another --schedule");
  RT_CHECK(step_size > 0, "lr schedule: step size must be positive, got ", step_size);
}

double LrSchedule::at(int64_t step) const {
  if (kind == Schedule::onecycle) {
    const double initial = base_lr / 25, final_lr = initial / 1e4;
    const double up_end = 0.3 * static_cast<double>(total_steps) - 1;
    const double down_end = static_cast<double>(total_steps) - 1;
    const double s = static_cast<double>(step);
    if (s <= up_end) return cosine_between(initial, base_lr, up_end > 0 ? s / up_end : 1.0);
    return cosine_between(base_lr, final_lr, std::min(1.0, (s - up_end) / (down_end - up_end)));
  }
  if (step < warmup_steps) {
    const double f = static_cast<double>(step) / static_cast<double>(warmup_steps);
    return base_lr * (warmup_start_factor + (1 - warmup_start_factor) * f);
  }
  const int64_t t = step - warmup_steps, span = total_steps - warmup_steps;
  if (kind == Schedule::step) return base_lr * std::pow(gamma, static_cast<double>(t / step_size));
  if (kind == Schedule::cosine)
    return cosine_between(base_lr, min_lr, std::min(1.0, static_cast<double>(t) / span));
  if (kind == Schedule::poly) return base_lr * std::pow(1 - std::min(1.0, double(t) / span), 2);
  return base_lr;
}

}  // namespace ringtrain
