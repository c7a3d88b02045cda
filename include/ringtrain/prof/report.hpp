#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ringtrain/prof/step_profiler.hpp"

namespace ringtrain {

// Each phase's share of the summed phase times (zeros when nothing was timed).
PhaseTimes phase_shares(const PhaseTimes& totals);

// The GPU utilisation (percent) below which a step that waits for neither data nor
// communication is held back by the host: the GPU idles between kernels while the host issues
// them (launches, descriptor set-up, waits for device values).
constexpr double kHostBoundGpuPercent = 95;

// What holds the steps back, from the phase shares and the GPUs' mean utilisation (percent;
// below 0 where it was not measured: the CPU, or no NVML): "data" (waiting for batches or their
// copies, over 10% of the step), "communication" (exposed all-reduce, or DataParallel's
// replicate, scatter and reduce, over 10%), "host" (neither, but the GPUs were busy less than
// kHostBoundGpuPercent of the time) or "compute".
std::string main_bottleneck(const PhaseTimes& shares, double gpu_util_percent);

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
