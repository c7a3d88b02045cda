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
  open_.push_back({p, device_.mark(phase_name(p)), clock_.seconds()});
}

void StepProfiler::end_step() {
  if (mode_ == ProfileMode::off || open_.empty()) return;
  const int64_t end = device_.mark(nullptr);
  marks_last_step_ = static_cast<int>(open_.size()) + 1;
  unread_.push_back({std::move(open_), end, clock_.seconds()});
  open_.clear();
  ++steps_;
  while (unread_.size() > kReadLag) read_oldest();
}

// The oldest unread step's phase times from its marks, into last_, the totals and the trace;
// then its marks go back to the device.
void StepProfiler::read_oldest() {
  const ClosedStep step = std::move(unread_.front());
  unread_.pop_front();
  last_.fill(0);
  double at = elapsed_s_;
  const int64_t index = steps_ - static_cast<int64_t>(unread_.size()) - 1;
  for (size_t i = 0; i < step.phases.size(); ++i) {
    const bool last = i + 1 == step.phases.size();
    const Boundary& b = step.phases[i];
    const double s =
        device_.seconds_between(b.mark, last ? step.end_mark : step.phases[i + 1].mark);
    last_[static_cast<size_t>(b.phase)] += s;
    if (mode_ == ProfileMode::trace) {
      const double host_s = (last ? step.host_end_s : step.phases[i + 1].host_s) - b.host_s;
      events_.push_back({b.phase, index, at, s, b.host_s, host_s});
    }
    at += s;
  }
  for (int p = 0; p < kPhases; ++p) totals_[p] += last_[p];
  elapsed_s_ = at;
  device_.release_marks(step.end_mark + 1);
}

void StepProfiler::read_all() {
  while (!unread_.empty()) read_oldest();
}

const PhaseTimes& StepProfiler::last_step() {
  read_all();
  return last_;
}

double StepProfiler::last_step_seconds() {
  read_all();
  return std::accumulate(last_.begin(), last_.end(), 0.0);
}

const PhaseTimes& StepProfiler::totals() {
  read_all();
  return totals_;
}

const std::vector<PhaseEvent>& StepProfiler::events() {
  read_all();
  return events_;
}

}  // namespace ringtrain
