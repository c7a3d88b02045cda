#include "ringtrain/prof/step_profiler.hpp"

#include <numeric>

namespace ringtrain {

const char* phase_name(Phase p) {
  static const char* names[kPhases] = {"data",     "copy",      "replicate", "scatter", "forward",
                                       "backward", "comm_wait", "optimizer", "other"};
  return names[static_cast<int>(p)];
}

bool phase_shown(Phase p, const PhaseTimes& totals) {
  const bool dp_only = p == Phase::replicate || p == Phase::scatter;
  return !dp_only || totals[static_cast<int>(p)] > 0;
}

template <>
const NameTable<ProfileMode>& names_of<ProfileMode>() {
  static const NameTable<ProfileMode> names = {
      {"off", ProfileMode::off}, {"summary", ProfileMode::summary}, {"trace", ProfileMode::trace}};
  return names;
}

StepProfiler::StepProfiler(Device& device, ProfileMode mode) : device_(device), mode_(mode) {}

void StepProfiler::start(Phase p) {
  if (mode_ == ProfileMode::off) return;
  if (open_.empty()) device_.reset_marks();
  open_.push_back({p, device_.mark(phase_name(p)), clock_.seconds()});
}

void StepProfiler::end_step() {
  if (mode_ == ProfileMode::off || open_.empty()) return;
  const int end = device_.mark(nullptr);
  const double host_end = clock_.seconds();
  last_.fill(0);
  double at = elapsed_s_;
  for (size_t i = 0; i < open_.size(); ++i) {
    const bool last = i + 1 == open_.size();
    const double s = device_.seconds_between(open_[i].mark, last ? end : open_[i + 1].mark);
    last_[static_cast<size_t>(open_[i].phase)] += s;
    if (mode_ == ProfileMode::trace) {
      const double host_s = (last ? host_end : open_[i + 1].host_s) - open_[i].host_s;
      events_.push_back({open_[i].phase, steps_, at, s, open_[i].host_s, host_s});
    }
    at += s;
  }
  for (int p = 0; p < kPhases; ++p) totals_[p] += last_[p];
  elapsed_s_ = at;
  marks_last_step_ = static_cast<int>(open_.size()) + 1;
  open_.clear();
  ++steps_;
}

double StepProfiler::last_step_seconds() const {
  return std::accumulate(last_.begin(), last_.end(), 0.0);
}

}  // namespace ringtrain
