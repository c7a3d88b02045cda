// The step profiler: phase times that add up to the step, its per-step cost, the trace it keeps,
// and the report built from it (shares, bottleneck, table, Chrome trace).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/prof/chrome_trace.hpp"
#include "ringtrain/prof/report.hpp"
#include "ringtrain/prof/step_profiler.hpp"

namespace ringtrain {
namespace {

using Clock = std::chrono::steady_clock;

void busy(double ms) {
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
}

// One step of data (20 ms), forward (40 ms) and other (nothing); returns the step's wall time.
double profiled_step(StepProfiler& prof) {
  const auto t0 = Clock::now();
  prof.start(Phase::data);
  busy(20);
  prof.start(Phase::forward);
  busy(40);
  prof.start(Phase::other);
  prof.end_step();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

TEST(StepProfiler, PhasesAddUpToTheMeasuredStep) {
  CpuBackend backend(1);
  StepProfiler prof(backend, ProfileMode::summary);
  double wall = 0;
  for (int i = 0; i < 3; ++i) {
    const double w = profiled_step(prof);
    wall += w;
    // Only the instants before the first mark and after the last one are outside the phases;
    // the margin is for a loaded machine descheduling the thread there.
    EXPECT_NEAR(prof.last_step_seconds(), w, 5e-3);
    EXPECT_GE(prof.last_step()[static_cast<int>(Phase::data)], 20e-3);
    EXPECT_GE(prof.last_step()[static_cast<int>(Phase::forward)], 40e-3);
    EXPECT_EQ(prof.last_step()[static_cast<int>(Phase::backward)], 0.0);
  }
  double total = 0;
  for (double t : prof.totals()) total += t;
  EXPECT_NEAR(total, wall, 15e-3);
  EXPECT_EQ(prof.steps(), 3);
}

TEST(StepProfiler, CostsOneMarkPerPhaseAndNothingWhenOff) {
  CpuBackend backend(1);
  StepProfiler summary(backend, ProfileMode::summary);
  profiled_step(summary);
  EXPECT_EQ(summary.marks_last_step(), 4);  // three phases and the end
  EXPECT_TRUE(summary.events().empty());    // summary mode keeps no per-step events

  CpuBackend other(1);
  StepProfiler off(other, ProfileMode::off);
  profiled_step(off);
  EXPECT_EQ(off.steps(), 0);
  EXPECT_EQ(off.marks_last_step(), 0);
  EXPECT_EQ(other.mark(nullptr), 0);  // the backend was never asked for a mark
}

TEST(StepProfiler, TraceModeKeepsEveryPhaseInOrder) {
  CpuBackend backend(1);
  StepProfiler prof(backend, ProfileMode::trace);
  profiled_step(prof);
  profiled_step(prof);
  ASSERT_EQ(prof.events().size(), 6u);
  const Phase order[] = {Phase::data, Phase::forward, Phase::other};
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(prof.events()[i].phase, order[i % 3]);
    EXPECT_EQ(prof.events()[i].step, static_cast<int64_t>(i / 3));
    if (i > 0) {
      EXPECT_NEAR(prof.events()[i].start_s,
                  prof.events()[i - 1].start_s + prof.events()[i - 1].duration_s, 1e-12);
    }
  }
}

TEST(Report, SharesBottleneckAndTable) {
  PhaseTimes t{};
  t[static_cast<int>(Phase::data)] = 3;
  t[static_cast<int>(Phase::forward)] = 3;
  t[static_cast<int>(Phase::backward)] = 4;
  const PhaseTimes s = phase_shares(t);
  EXPECT_DOUBLE_EQ(s[static_cast<int>(Phase::data)], 0.3);
  EXPECT_EQ(main_bottleneck(s, 50), "data");
  EXPECT_DOUBLE_EQ(busy_share(s), 0.7);
  t[static_cast<int>(Phase::data)] = 0;
  t[static_cast<int>(Phase::comm_wait)] = 2;
  EXPECT_EQ(main_bottleneck(phase_shares(t), 50), "communication");
  t[static_cast<int>(Phase::comm_wait)] = 0.5;
  EXPECT_EQ(main_bottleneck(phase_shares(t), -1), "compute");  // not measured
  EXPECT_EQ(main_bottleneck(phase_shares(t), 97), "compute");
  EXPECT_EQ(main_bottleneck(phase_shares(t), 68), "host");  // the GPU idles, nothing waited for
  const std::string table = format_phase_table(t, 10);
  EXPECT_NE(table.find("backward       4.000    400.00"), std::string::npos) << table;
  EXPECT_NE(table.find("step"), std::string::npos);
  EXPECT_EQ(peak_tflops("NVIDIA H200"), 989.0);
  EXPECT_EQ(peak_tflops("cpu"), 0.0);
}

TEST(Report, ChromeTraceIsValidJsonWithOneEventPerPhase) {
  const std::vector<PhaseEvent> events = {{Phase::data, 0, 0.0, 0.001, 0.5, 0.001},
                                          {Phase::forward, 0, 0.001, 0.002, 0.501, 0.002}};
  const std::string path =
      (std::filesystem::temp_directory_path() / "ringtrain_test_trace" / "t.json").string();
  // Rank 3 started its profiler 2 s after rank 0: its events sit 2 s later on the job's clock.
  const TraceClock clock{1.7e9, 2.0};
  TraceRows rows;
  rows.phases = events;
  rows.device_label = "cpu";
  write_chrome_trace(path, rows, 3, "rank 3 on node7 (cpu)", clock);
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in);
  int phases = 0;
  for (const auto& e : j.at("traceEvents")) {
    EXPECT_EQ(e.at("pid"), 3);
    if (e.at("ph") != "X") continue;
    ++phases;
    EXPECT_GT(e.at("dur").get<double>(), 0);
  }
  EXPECT_EQ(phases, 2);
  EXPECT_EQ(j.at("traceEvents").back().at("name"), "forward");
  EXPECT_DOUBLE_EQ(j.at("traceEvents").back().at("ts").get<double>(), 2e6 + 1000.0);
  EXPECT_EQ(j.at("traceEvents").front().at("args").at("name"), "rank 3 on node7 (cpu)");
  EXPECT_DOUBLE_EQ(j.at("otherData").at("zero_unix_s").get<double>(), 1.7e9);

  // With the host row: every phase twice, the second copy on row 1 at the host's times.
  rows.device_label = "cuda:0";
  rows.host_row = true;
  write_chrome_trace(path, rows, 3, "rank 3", TraceClock{});
  std::ifstream again(path);
  const nlohmann::json both = nlohmann::json::parse(again);
  int host = 0;
  for (const auto& e : both.at("traceEvents"))
    if (e.at("ph") == "X" && e.at("tid") == 1) {
      ++host;
      EXPECT_GE(e.at("ts").get<double>(), 5e5);
    }
  EXPECT_EQ(host, 2);
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

// The rows besides the phases: one per bucket and one per loader thread, named and placed after
// the phase rows; a bucket's all-reduce holds its wait, both ending at the same microsecond.
TEST(Report, ChromeTraceHasNamedOrderedRowsForBucketsAndLoaderThreads) {
  TraceRows rows;
  rows.phases = {{Phase::backward, 0, 0.0, 0.004, 0.010, 0.004}};
  rows.device_label = "cuda:0";
  rows.host_row = true;
  // Bucket 1 is launched after backward and waited for once bucket 0's wait is done.
  rows.all_reduces = {{7, 0, 4000, 2, true, 0.0111, 0.0141234, 0.0153339},
                      {7, 1, 8000, 5, false, 0.0140, 0.0153339, 0.0160}};
  rows.loader = {{BatchLane::kSynchronous, {{0, 0, 16, 0.001, 0.002}}},
                 {1, {{1, 3, 12, 0.002, 0.003}}}};
  const nlohmann::json j = chrome_trace(rows, 1, "rank 1", TraceClock{0, 0.25});
  std::map<int, std::string> names;
  std::map<int, int> order;
  std::vector<nlohmann::json> host;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("name") == "thread_name") names[e.at("tid")] = e.at("args").at("name");
    if (e.at("name") == "thread_sort_index") order[e.at("tid")] = e.at("args").at("sort_index");
    if (e.at("ph") == "X" && e.at("tid").get<int>() >= kAllReduceRows) host.push_back(e);
  }
  const std::map<int, std::string> expected = {
      {0, "cuda:0"},
      {1, "host"},
      {100, "all-reduce bucket 0 (host: launch to wait done)"},
      {101, "all-reduce bucket 1 (host: launch to wait done)"},
      {1000, "loader (synchronous)"},
      {1002, "loader worker 1"}};
  EXPECT_EQ(names, expected);
  std::vector<std::pair<int, int>> by_place;
  for (const auto& [tid, place] : order) by_place.push_back({place, tid});
  std::sort(by_place.begin(), by_place.end());
  std::vector<int> tids;
  for (const auto& p : by_place) tids.push_back(p.second);
  EXPECT_EQ(tids, (std::vector<int>{0, 1, 100, 101, 1000, 1002}));

  ASSERT_EQ(host.size(), 6u);  // two all-reduces, their waits, two batches
  const nlohmann::json &reduce = host[0], &wait = host[1], &batch = host[5];
  EXPECT_EQ(reduce.at("name"), "allreduce bucket 0");
  EXPECT_EQ(reduce.at("tid"), 100);
  EXPECT_DOUBLE_EQ(reduce.at("ts").get<double>(), 261100);  // (0.25 + 0.0111) s in whole us
  EXPECT_DOUBLE_EQ(reduce.at("dur").get<double>(), 4234);
  EXPECT_EQ(reduce.at("args"), (nlohmann::json{{"step", 7},
                                               {"bucket", 0},
                                               {"bytes", 4000},
                                               {"params", 2},
                                               {"launched_during_backward", true}}));
  EXPECT_EQ(wait.at("name"), "wait");
  EXPECT_EQ(wait.at("tid"), 100);
  EXPECT_DOUBLE_EQ(wait.at("ts").get<double>(), 264123);
  EXPECT_DOUBLE_EQ(wait.at("ts").get<double>() + wait.at("dur").get<double>(),
                   reduce.at("ts").get<double>() + reduce.at("dur").get<double>());
  EXPECT_EQ(host[2].at("tid"), 101);
  EXPECT_EQ(host[4].at("name"), "batch 0");
  EXPECT_EQ(host[4].at("tid"), 1000);
  EXPECT_EQ(batch.at("name"), "batch 3");
  EXPECT_EQ(batch.at("tid"), 1002);
  EXPECT_EQ(batch.at("args"), (nlohmann::json{{"batch", 3}, {"images", 12}, {"epoch", 1}}));
}

}  // namespace
}  // namespace ringtrain
