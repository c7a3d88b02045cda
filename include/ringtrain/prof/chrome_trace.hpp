#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ringtrain/prof/host_spans.hpp"
#include "ringtrain/prof/step_profiler.hpp"

namespace ringtrain {

// Where a rank's trace sits on the job's common clock.
struct TraceClock {
  double zero_unix_s = 0;  // the job's time 0: rank 0's profiler start (CLOCK_REALTIME)
  double offset_s = 0;     // this rank's profiler start after it
};

// What one rank's trace shows, one row (Chrome thread) per line below, top to bottom.
struct TraceRows {
  std::vector<PhaseEvent> phases;  // the device row: its clock, steps laid end to end
  std::string device_label;        // that row's name
  bool host_row = false;           // the same phases as the host issued them, on a row "host"
  std::vector<AllReduceSpan> all_reduces;  // a row per DDP bucket
  std::vector<BatchLane> loader;           // a row per loader thread
};

// The rows' thread ids, which are also their sort indices: bucket b is row kAllReduceRows + b,
// the synchronous loader row kLoaderRows and loader worker w row kLoaderRows + 1 + w.
constexpr int kDeviceRow = 0, kHostRow = 1, kAllReduceRows = 100, kLoaderRows = 1000;

// A Chrome trace (viewable in Perfetto or chrome://tracing), process id = rank, named
// `process_label`, its rows named (thread_name) and ordered (thread_sort_index) as in TraceRows:
// one complete event per phase per step; per bucket and step an "allreduce bucket B" from its
// launch to the return of its wait, holding a "wait" from the start of that wait; per batch a
// "batch N" on the row of the loader thread that assembled it. Times are on the job's clock
// (`clock`), so the ranks' traces line up when loaded together; the trace records its zero as
// otherData.zero_unix_s.
nlohmann::json chrome_trace(const TraceRows& rows, int rank, const std::string& process_label,
                            const TraceClock& clock);

// chrome_trace() written to `path` (--trace-dir); a FIFO that nobody reads gets a warning
// instead, and the run goes on.
void write_chrome_trace(const std::string& path, const TraceRows& rows, int rank,
                        const std::string& process_label, const TraceClock& clock);

}  // namespace ringtrain
