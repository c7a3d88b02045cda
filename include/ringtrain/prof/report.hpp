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

// Where a rank's trace sits on the job's common clock.
struct TraceClock {
  double zero_unix_s = 0;  // the job's time 0: rank 0's profiler start (CLOCK_REALTIME)
  double offset_s = 0;     // this rank's profiler start after it
};

// A Chrome trace (viewable in Perfetto or chrome://tracing), process id = rank, named
// `process_label`: one complete event per phase per step on a row named after `device_label`
// (the device's clock), and with `host_row` a second row with the same phases as the host
// issued them. Times are on the job's clock (`clock`), so the ranks' traces line up when loaded
// together; the file records its zero as otherData.zero_unix_s.
void write_chrome_trace(const std::string& path, const std::vector<PhaseEvent>& events, int rank,
                        const std::string& process_label, const std::string& device_label,
                        bool host_row, const TraceClock& clock);

}  // namespace ringtrain
