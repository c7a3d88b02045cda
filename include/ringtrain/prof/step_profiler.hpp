#pragma once
#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "ringtrain/backend/device.hpp"
#include "ringtrain/core/names.hpp"
#include "ringtrain/prof/host_clock.hpp"

namespace ringtrain {

// Where a training step's time goes. On a GPU the phases are timed on the device's clock
// (CUDA events), so a phase in which the GPU idled (waiting for data, for an all-reduce)
// shows that idle time. replicate and scatter are DataParallel's alone (its copies of the
// weights and of the batch chunks to the other devices); comm is DDP's exposed all-reduce or
// DataParallel's reduce onto device 0.
enum class Phase { data, copy, replicate, scatter, forward, backward, comm_wait, optimizer, other };
constexpr int kPhases = 9;
const char* phase_name(Phase p);
using PhaseTimes = std::array<double, kPhases>;
// Whether a report lists phase p for these totals: every phase, except DataParallel's own
// (replicate, scatter) when they took no time, so that DDP's tables keep their rows.
bool phase_shown(Phase p, const PhaseTimes& totals);

enum class ProfileMode { off, summary, trace };
template <>
const NameTable<ProfileMode>& names_of<ProfileMode>();

// One phase of one step, for the Chrome trace: on the device's clock (steps laid end to end)
// and as the host issued it (seconds on the profiler's HostClock).
struct PhaseEvent {
  Phase phase;
  int64_t step;
  double start_s, duration_s;
  double host_start_s, host_duration_s;
};

// Times the phases of each step: start(p) ends the running phase and starts p (opening a step
// when none is open); end_step() closes the step. Every phase boundary is one Device::mark();
// nothing is done when the mode is off.
// Note: a closed step's marks are read kReadLag steps later, when the device has finished its
// work: reading them at once would make the host wait for the device to drain after every step,
// and the GPU would idle while the host issues the next one. The accessors of the times read
// the steps still unread first (a wait, at the end of an epoch or a probe, not every step).
class StepProfiler {
 public:
  StepProfiler(Device& device, ProfileMode mode);

  static constexpr size_t kReadLag = 2;

  ProfileMode mode() const { return mode_; }
  void start(Phase p);
  void end_step();

  // The phase times of the last closed step, and of all of them.
  const PhaseTimes& last_step();
  double last_step_seconds();
  const PhaseTimes& totals();
  int64_t steps() const { return steps_; }  // closed steps
  // Marks the last step took: the profiler's whole per-step cost on the device.
  int marks_last_step() const { return marks_last_step_; }
  const std::vector<PhaseEvent>& events();  // trace mode only
  // The host clock of its events, started with the profiler; the trace's other host rows (DDP's
  // all-reduces, the loader threads) are timed on it too.
  const HostClock& clock() const { return clock_; }
  // When the profiler started, on the wall clock (CLOCK_REALTIME seconds): its events' time 0.
  double origin_unix_s() const { return clock_.origin_unix_s(); }

 private:
  Device& device_;
  ProfileMode mode_;
  HostClock clock_;

  struct Boundary {
    Phase phase;  // the phase that starts at this mark
    int64_t mark;
    double host_s;
  };
  std::vector<Boundary> open_;  // marks of the step in progress
  struct ClosedStep {
    std::vector<Boundary> phases;
    int64_t end_mark;
    double host_end_s;
  };
  std::deque<ClosedStep> unread_;  // closed steps whose marks are not read yet, oldest first
  void read_oldest();
  void read_all();
  PhaseTimes last_{}, totals_{};
  int64_t steps_ = 0;
  int marks_last_step_ = 0;
  double elapsed_s_ = 0;  // device time covered by the closed steps, for trace timestamps
  std::vector<PhaseEvent> events_;
};

}  // namespace ringtrain
