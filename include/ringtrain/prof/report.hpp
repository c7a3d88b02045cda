#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ringtrain/prof/step_profiler.hpp"

namespace ringtrain {

// Each phase's share of the summed phase times (zeros when nothing was timed).
PhaseTimes phase_shares(const PhaseTimes& totals);

// What holds the steps back, from the phase shares: "data" (waiting for batches or their
// copies, over 10% of the step), "communication" (exposed all-reduce, or DataParallel's
// replicate, scatter and reduce, over 10%) or "compute".
std::string main_bottleneck(const PhaseTimes& shares);

// The share of the step the device computes in (forward, backward, optimizer).
double busy_share(const PhaseTimes& shares);

// PyTorch profiler's key_averages-style table: phase, total, mean per step, share.
std::string format_phase_table(const PhaseTimes& totals, int64_t steps);

// {"data": value, ...} of the phases shown (phase_shown), for the metrics lines and the run
// summary: shares or seconds.
nlohmann::json phases_json(const PhaseTimes& values);

// Dense 16-bit tensor-core peak of a device by name (TFLOP/s), 0 when unknown.
double peak_tflops(const std::string& device_name);

}  // namespace ringtrain
