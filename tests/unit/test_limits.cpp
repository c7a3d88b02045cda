// Sizes computed from user input overflow into an error, never silently; every numeric setting
// of a TrainConfig is checked against its range, NaN and infinity included.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <thread>

#include "ringtrain/core/checked_math.hpp"
#include "ringtrain/core/memory_budget.hpp"
#include "ringtrain/core/tensor.hpp"
#include "ringtrain/data/synthetic.hpp"
#include "ringtrain/run/setup.hpp"
#include "ringtrain/run_config/config.hpp"
#include "test_util.hpp"

namespace ringtrain {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

TEST(CheckedMath, OverflowIsAnErrorNamingTheSize) {
  EXPECT_EQ(checked_mul(1000000, 1000000, "x"), 1000000000000);
  EXPECT_EQ(checked_add(kInt64Max - 1, 1, "x"), kInt64Max);
  try {
    checked_mul(kInt64Max / 2, 3, "train: --epochs x steps");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("train: --epochs x steps: "), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(checked_add(kInt64Max, 1, "x"), Error);
  EXPECT_THROW(checked_mul(-kInt64Max, 2, "x"), Error);
}

TEST(CheckedMath, TensorOfMoreThan2To63ElementsIsRefused) {
  EXPECT_EQ(shape_numel({2, 3, 4}), 24);
  EXPECT_THROW(shape_numel({1 << 30, 1 << 30, 1 << 30}), Error);
  EXPECT_THROW(Tensor::zeros({int64_t{1} << 31, int64_t{1} << 31}, DType::f32), Error);
}

TEST(TrainConfigLimits, EveryNumberOutsideItsRangeIsAConfigError) {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  const auto refused = [](auto change) {
    TrainConfig c;
    change(c);
    EXPECT_THROW(c.validate(), ConfigError) << describe(c);
  };
  TrainConfig ok;
  EXPECT_NO_THROW(ok.validate());
  for (double w : {0.0, 1e-6, 17.0, nan, inf}) refused([&](TrainConfig& c) { c.model.width = w; });
  for (double lr : {0.0, -1.0, nan, inf, 1e308}) refused([&](TrainConfig& c) { c.lr = lr; });
  for (int64_t e : {int64_t{0}, int64_t{-1}, limits::kMaxEpochs + 1, kInt64Max})
    refused([&](TrainConfig& c) { c.epochs = e; });
  for (int64_t s : {int64_t{-1}, limits::kMaxSteps + 1, kInt64Max})
    refused([&](TrainConfig& c) { c.steps = s; });
  refused([](TrainConfig& c) { c.batch_size = limits::kMaxBatch + 1; });
  refused([](TrainConfig& c) { c.memory_budget_mb = std::nan(""); });
  refused([](TrainConfig& c) { c.memory_budget_mb = 1e308; });
  refused([](TrainConfig& c) { c.label_smoothing = std::nanf(""); });
  refused([](TrainConfig& c) { c.workers = limits::kMaxWorkers + 1; });
  refused([](TrainConfig& c) { c.comm_timeout_s = std::numeric_limits<double>::infinity(); });
  refused([](TrainConfig& c) { c.threads = limits::kMaxThreads + 1; });
}

// --cuda-graph on what it cannot capture: the CPU, fp16's per-step finite check, several
// micro-batches, DataParallel.
TEST(TrainConfigLimits, CudaGraphOutsideWhatItCapturesIsAConfigError) {
  TrainConfig c;
  c.cuda_graph = true;
  c.device = DeviceKind::cuda;
  EXPECT_NO_THROW(c.validate());
  const auto refused = [&](auto change, const char* says) {
    TrainConfig bad = c;
    change(bad);
    try {
      bad.validate();
      ADD_FAILURE() << "accepted: " << says;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refused([](TrainConfig& t) { t.device = DeviceKind::cpu; }, "--cuda-graph is for --device cuda");
  refused([](TrainConfig& t) { t.amp = Precision::fp16; }, "fp16's loss scaling");
  refused([](TrainConfig& t) { t.accum_steps = 2; }, "drop --accum-steps 2");
  refused(
      [](TrainConfig& t) {
        t.mode = Mode::dp;
        t.devices = 2;
      },
      "drop --mode dp");
}

TEST(EvalBatchSize, DefaultsToTheTrainingBatchAndIsChecked) {
  TrainConfig c;
  c.batch_size = 48;
  EXPECT_EQ(loader_config(c, false).batch_size, 48);
  c.eval_batch_size = 500;
  EXPECT_EQ(loader_config(c, false).batch_size, 500);
  EXPECT_EQ(loader_config(c, true).batch_size, 48);
  c.eval_batch_size = -1;
  EXPECT_THROW(c.validate(), ConfigError);
}

TEST(SynthLimits, ADatasetLargerThanMemoryIsRefusedBeforeAllocating) {
  SynthConfig c;
  c.train_count = kMaxSynthImages;
  c.height = c.width = kMaxSynthSide;
  try {
    make_synthetic(c);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("GB of memory"), std::string::npos) << e.what();
  }
  c.height = kMaxSynthSide + 1;
  EXPECT_THROW(make_synthetic(c), Error);
}

// A request waits while the bytes held would go over the budget, and is granted once they are
// given back; one larger than the whole budget is granted alone.
TEST(MemoryBudget, RequestsWaitForRoomAndAnOversizedOneRunsAlone) {
  MemoryBudget budget(100);
  MemoryBudget::Lease first = budget.take(60);
  std::atomic<bool> granted{false};
  std::thread second([&] {
    const MemoryBudget::Lease lease = budget.take(60);
    granted = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(granted);  // 120 of 100: waits
  first = MemoryBudget::Lease();
  second.join();
  EXPECT_TRUE(granted);
  // More than the budget, with nothing held: granted, and held, so a small request waits for it.
  MemoryBudget::Lease alone = budget.take(500);
  std::atomic<bool> small_granted{false};
  std::thread small([&] {
    const MemoryBudget::Lease lease = budget.take(1);
    small_granted = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(small_granted);  // the oversized lease holds the whole budget
  alone = MemoryBudget::Lease();
  small.join();
  EXPECT_TRUE(small_granted);
}

TEST(MemoryBudget, TheLimitNamesWhereItComesFrom) {
  const MemoryLimit limit = memory_limit();
  EXPECT_GT(limit.bytes, 0);
  EXPECT_NE(limit.source.find(" GB"), std::string::npos) << limit.source;
  try {
    check_fits_memory(limit.bytes + 1, "import: 5 images", "import fewer");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("import: 5 images need "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(limit.source + ": import fewer"), std::string::npos)
        << e.what();
  }
}

// Writes `text` to `path`, its folders created.
void write_cgroup_file(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

// A Slurm job's memory limit is a cgroup's: on the job's group or a group above it.
TEST(MemoryBudget, TheLeastMemoryCgroupLimitAboveTheProcessCounts) {
  const std::filesystem::path v2 = test::temp_path("cgroup_v2");
  std::filesystem::remove_all(v2);
  write_cgroup_file(v2 / "slurm/job_7/memory.max", "4000000000\n");
  write_cgroup_file(v2 / "slurm/job_7/step_0/memory.max", "max\n");
  write_cgroup_file(v2 / "memory.max", "9000000000\n");
  EXPECT_EQ(cgroup_memory_limit("0::/slurm/job_7/step_0\n", v2.string()), 4000000000);
  EXPECT_EQ(cgroup_memory_limit("0::/slurm\n", v2.string()), 9000000000);

  const std::filesystem::path v1 = test::temp_path("cgroup_v1");
  std::filesystem::remove_all(v1);
  write_cgroup_file(v1 / "memory/job/memory.limit_in_bytes", "2000000000\n");
  write_cgroup_file(v1 / "memory/memory.limit_in_bytes", "9223372036854771712\n");  // none
  const std::string groups = "5:cpu,cpuacct:/job\n4:memory:/job\n1:name=systemd:/\n";
  EXPECT_EQ(cgroup_memory_limit(groups, v1.string()), 2000000000);
  EXPECT_EQ(cgroup_memory_limit("4:memory:/\n", v1.string()), -1);  // only "no limit"
  EXPECT_EQ(cgroup_memory_limit("4:memory:/absent\n", v1.string()), -1);
  EXPECT_EQ(cgroup_memory_limit("", v1.string()), -1);
}

}  // namespace
}  // namespace ringtrain
