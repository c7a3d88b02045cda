// The step profiler: phase times that add up to the step, its per-step cost, the trace it keeps,
// and the report built from it (shares, bottleneck, table, Chrome trace).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
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
  EXPECT_EQ(main_bottleneck(s), "data");
  EXPECT_DOUBLE_EQ(busy_share(s), 0.7);
  t[static_cast<int>(Phase::data)] = 0;
  t[static_cast<int>(Phase::comm)] = 2;
  EXPECT_EQ(main_bottleneck(phase_shares(t)), "communication");
  t[static_cast<int>(Phase::comm)] = 0.5;
  EXPECT_EQ(main_bottleneck(phase_shares(t)), "compute");
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
  write_chrome_trace(path, events, 3, "rank 3 on node7 (cpu)", "cpu", false, clock);
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
  write_chrome_trace(path, events, 3, "rank 3", "cuda:0", true, TraceClock{});
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

}  // namespace
}  // namespace ringtrain
