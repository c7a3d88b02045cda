#include "ringtrain/prof/chrome_trace.hpp"

#include <spdlog/spdlog.h>

#include <cmath>
#include <set>

#include "ringtrain/core/atomic_file.hpp"
#include "ringtrain/core/error.hpp"
#include "ringtrain/core/json_text.hpp"
#include "ringtrain/core/output_file.hpp"

namespace ringtrain {
namespace {

using nlohmann::json;

// The metadata events that name row `tid` and give it its place (its id).
void name_row(json& trace, int pid, int tid, const std::string& name) {
  trace.push_back({{"name", "thread_name"},
                   {"ph", "M"},
                   {"pid", pid},
                   {"tid", tid},
                   {"args", {{"name", name}}}});
  trace.push_back({{"name", "thread_sort_index"},
                   {"ph", "M"},
                   {"pid", pid},
                   {"tid", tid},
                   {"args", {{"sort_index", tid}}}});
}

// A complete event on the host clock.
// Note: both ends are rounded to whole microseconds of the job's clock, so an event that ends
// where another one ends (a bucket's wait and its all-reduce) ends at the very same instant in
// Perfetto, which nests slices of one row only when neither crosses the other's end.
json host_event(const std::string& name, const char* category, int pid, int tid, double start_s,
                double end_s, double offset_s, json args) {
  const double start_us = std::round((offset_s + start_s) * 1e6);
  const double end_us = std::round((offset_s + end_s) * 1e6);
  return {{"name", name},
          {"cat", category},
          {"ph", "X"},
          {"pid", pid},
          {"tid", tid},
          {"ts", start_us},
          {"dur", end_us - start_us},
          {"args", std::move(args)}};
}

void add_phase_rows(json& trace, const TraceRows& rows, int pid, double offset_s) {
  const int count = rows.host_row ? 2 : 1;
  name_row(trace, pid, kDeviceRow, rows.device_label);
  if (rows.host_row) name_row(trace, pid, kHostRow, "host");
  for (const PhaseEvent& e : rows.phases)
    for (int row = 0; row < count; ++row) {
      const bool host = row == kHostRow;
      trace.push_back({{"name", phase_name(e.phase)},
                       {"cat", "step"},
                       {"ph", "X"},
                       {"pid", pid},
                       {"tid", row},
                       {"ts", (offset_s + (host ? e.host_start_s : e.start_s)) * 1e6},
                       {"dur", (host ? e.host_duration_s : e.duration_s) * 1e6},
                       {"args", {{"step", e.step}}}});
    }
}

void add_all_reduce_rows(json& trace, const std::vector<AllReduceSpan>& spans, int pid,
                         double offset_s) {
  std::set<int> buckets;
  for (const AllReduceSpan& s : spans) buckets.insert(s.bucket);
  for (int b : buckets)
    name_row(trace, pid, kAllReduceRows + b,
             str_cat("all-reduce bucket ", b, " (host: launch to wait done)"));
  for (const AllReduceSpan& s : spans) {
    const int tid = kAllReduceRows + s.bucket;
    trace.push_back(host_event(str_cat("allreduce bucket ", s.bucket), "comm", pid, tid, s.launch_s,
                               s.done_s, offset_s,
                               {{"step", s.step},
                                {"bucket", s.bucket},
                                {"bytes", s.bytes},
                                {"params", s.params},
                                {"launched_during_backward", s.during_backward}}));
    trace.push_back(host_event("wait", "comm", pid, tid, s.wait_s, s.done_s, offset_s,
                               {{"step", s.step}, {"bucket", s.bucket}}));
  }
}

void add_loader_rows(json& trace, const std::vector<BatchLane>& lanes, int pid, double offset_s) {
  for (const BatchLane& lane : lanes) {
    const bool sync = lane.worker == BatchLane::kSynchronous;
    const int tid = sync ? kLoaderRows : kLoaderRows + 1 + lane.worker;
    name_row(trace, pid, tid,
             sync ? "loader (synchronous)" : str_cat("loader worker ", lane.worker));
    for (const BatchSpan& s : lane.spans)
      trace.push_back(host_event(str_cat("batch ", s.batch), "data", pid, tid, s.start_s,
                                 s.start_s + s.duration_s, offset_s,
                                 {{"batch", s.batch}, {"images", s.images}, {"epoch", s.epoch}}));
  }
}

}  // namespace

json chrome_trace(const TraceRows& rows, int rank, const std::string& process_label,
                  const TraceClock& clock) {
  json trace = json::array();
  trace.push_back(
      {{"name", "process_name"}, {"ph", "M"}, {"pid", rank}, {"args", {{"name", process_label}}}});
  trace.push_back({{"name", "process_sort_index"},
                   {"ph", "M"},
                   {"pid", rank},
                   {"args", {{"sort_index", rank}}}});
  add_phase_rows(trace, rows, rank, clock.offset_s);
  add_all_reduce_rows(trace, rows.all_reduces, rank, clock.offset_s);
  add_loader_rows(trace, rows.loader, rank, clock.offset_s);
  const json other = {{"zero_unix_s", clock.zero_unix_s}, {"rank", rank}};
  return {{"traceEvents", trace}, {"displayTimeUnit", "ms"}, {"otherData", other}};
}

void write_chrome_trace(const std::string& path, const TraceRows& rows, int rank,
                        const std::string& process_label, const TraceClock& clock) {
  try {
    write_text_file(path, json_text(chrome_trace(rows, rank, process_label, clock)) + "\n",
                    "--trace-dir");
  } catch (const UnreadStreamError& e) {
    spdlog::warn("{}; the trace is not written", e.what());
  }
}

}  // namespace ringtrain
