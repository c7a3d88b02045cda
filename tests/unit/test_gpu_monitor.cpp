// The GPU monitor's arithmetic over scripted readings (NVML itself needs a GPU): per device
// utilisation mean and minimum, peak memory, spans that reset, and devices merged.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <memory>
#include <string>
#include <vector>

#include "ringtrain/prof/gpu_monitor.hpp"

namespace ringtrain {
namespace {

// Scripted readings, per device, in order; a negative utilisation is a failed reading.
GpuMonitor::Sampler script(std::vector<std::vector<GpuSample>> readings) {
  auto next = std::make_shared<std::vector<size_t>>(readings.size(), 0);
  auto all = std::make_shared<std::vector<std::vector<GpuSample>>>(std::move(readings));
  return [next, all](size_t device, GpuSample& s) {
    s = (*all)[device].at((*next)[device]++);
    return s.util_percent >= 0;
  };
}

TEST(GpuMonitor, EachDeviceHasItsOwnMeanMinimumAndPeakMemory) {
  GpuMonitor monitor({"0000:01:00.0", "0000:41:00.0"},
                     script({{{10, 100, 1000}, {30, 300, 1000}, {20, 200, 1000}},
                             {{50, 500, 2000}, {-1, 0, 0}, {80, 400, 2000}}}));
  for (int i = 0; i < 3; ++i) monitor.sample();
  const std::vector<GpuUse> use = monitor.take();
  ASSERT_EQ(use.size(), 2u);
  EXPECT_EQ(use[0].device, "0000:01:00.0");
  EXPECT_DOUBLE_EQ(use[0].util_mean, 20);
  EXPECT_DOUBLE_EQ(use[0].util_min, 10);
  EXPECT_DOUBLE_EQ(use[0].memory_used_max, 300);
  EXPECT_DOUBLE_EQ(use[0].memory_total, 1000);
  EXPECT_EQ(use[0].samples, 3);
  EXPECT_DOUBLE_EQ(use[1].util_mean, 65);  // the failed reading counts for nothing
  EXPECT_DOUBLE_EQ(use[1].util_min, 50);
  EXPECT_DOUBLE_EQ(use[1].memory_used_max, 500);
  EXPECT_EQ(use[1].samples, 2);
}

TEST(GpuMonitor, TakeStartsANewSpan) {
  GpuMonitor monitor({"a"}, script({{{90, 1, 2}, {40, 1, 2}}}));
  monitor.sample();
  EXPECT_DOUBLE_EQ(monitor.take()[0].util_mean, 90);
  const GpuUse empty = monitor.take()[0];
  EXPECT_EQ(empty.samples, 0);
  EXPECT_EQ(empty.util_mean, -1);
  EXPECT_EQ(empty.device, "a");
  monitor.sample();
  EXPECT_DOUBLE_EQ(monitor.take()[0].util_min, 40);  // not 90: the old span is gone
}

TEST(GpuMonitor, MergedSpansWeighTheirSamples) {
  GpuUse run;
  merge_use(run, GpuUse{"a", 20, 10, 300, 1000, 2});
  merge_use(run, GpuUse{"a", 50, 45, 100, 1000, 1});
  merge_use(run, GpuUse{"a", -1, -1, -1, -1, 0});  // an epoch without samples
  EXPECT_DOUBLE_EQ(run.util_mean, 30);
  EXPECT_DOUBLE_EQ(run.util_min, 10);
  EXPECT_DOUBLE_EQ(run.memory_used_max, 300);
  EXPECT_EQ(run.samples, 3);
}

TEST(GpuMonitor, AllDevicesTakesTheMeanOfMeansAndSkipsUnmeasuredOnes) {
  const GpuUse all = all_devices({GpuUse{"a", 20, 10, 300, 1000, 4}, GpuUse{"b", -1, -1, -1, -1, 0},
                                  GpuUse{"c", 60, 55, 900, 2000, 1}});
  EXPECT_DOUBLE_EQ(all.util_mean, 40);
  EXPECT_DOUBLE_EQ(all.util_min, 10);
  EXPECT_DOUBLE_EQ(all.memory_used_max, 900);
  EXPECT_EQ(all_devices({GpuUse{"b", -1, -1, -1, -1, 0}}).util_mean, -1);
}

TEST(GpuMonitor, WithoutAGpuOrNvmlItSaysWhy) {
  const GpuMonitor none(std::vector<std::string>{});
  EXPECT_FALSE(none.available());
  EXPECT_EQ(none.why_unavailable(), "no GPU in use");
  if (void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW)) {
    dlclose(nvml);
    GTEST_SKIP() << "NVML is installed here: the no-NVML message cannot be checked";
  }
  const GpuMonitor missing(std::vector<std::string>{"0000:01:00.0"});
  EXPECT_FALSE(missing.available());
  EXPECT_NE(missing.why_unavailable().find("libnvidia-ml.so.1"), std::string::npos);
}

}  // namespace
}  // namespace ringtrain
