// The trainer end to end in one process: same seed, same losses; the synthetic data is learnt.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ringtrain/data/hdf5_io.hpp"
#include "ringtrain/data/synthetic.hpp"
#include "ringtrain/run/session.hpp"
#include "ringtrain/run/step.hpp"
#include "ringtrain/run/trainer.hpp"
#include "test_util.hpp"

namespace ringtrain {
namespace {

// ctest runs tests in parallel processes: each writes its own file.
std::string small_dataset(int64_t train_count = 1024, int64_t test_count = 500) {
  const std::string path =
      test::temp_path(std::string("train_") +
                      ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".h5");
  SynthConfig c;
  c.train_count = train_count;
  c.test_count = test_count;
  c.height = c.width = 16;
  write_hdf5_dataset(path, make_synthetic(c));
  return path;
}

TrainConfig small_config(const std::string& data) {
  TrainConfig c;
  c.data = data;
  c.model.depth = 18;
  c.model.width = 0.25;
  c.batch_size = 32;
  c.lr = 0.05;
  c.threads = 2;
  c.log_interval_s = 1e9;
  c.final_checkpoint = false;
  // These tests run at once under ctest -j, each in its own process: one checkpoint folder each
  // (a folder is claimed by one run at a time).
  c.checkpoint_dir = test::temp_path("checkpoints");
  return c;
}

TEST(Train, SameSeedGivesBitIdenticalLosses) {
  TrainConfig c = small_config(small_dataset());
  c.steps = 6;
  const TrainResult a = train(c), b = train(c);
  ASSERT_EQ(a.step_losses.size(), 6u);
  EXPECT_EQ(a.step_losses, b.step_losses);
  c.seed = 1;
  EXPECT_NE(train(c).step_losses, a.step_losses);
}

// The steps keep their losses on the device: running them reads no device value, and taking
// their losses afterwards is one read that gives each step's mean over its micro-batches, the
// same values a run of those steps reports.
TEST(Train, StepsReadNoDeviceValueUntilTheirLossesAreTaken) {
  TrainConfig c = small_config(small_dataset());
  c.accum_steps = 2;
  c.steps = 3;
  c.batch_size = 16;
  c.checkpoint_dir = test::temp_path("train_reads_ckpt");
  const TrainResult run = train(c);
  TrainSession s(c);
  s.train_batches->start_epoch(0);
  const int64_t before = s.backend().values_read();
  for (int64_t step = 0; step < 3; ++step) train_step(s, s.schedule.at(step), step);
  EXPECT_EQ(s.backend().values_read(), before);
  const std::vector<BatchResult> losses = take_step_losses(s);
  EXPECT_EQ(s.backend().values_read(), before + 1);
  ASSERT_EQ(losses.size(), 3u);
  for (size_t i = 0; i < losses.size(); ++i) EXPECT_EQ(losses[i].loss, run.step_losses[i]) << i;
  EXPECT_TRUE(take_step_losses(s).empty());
}

// Note: four epochs, not two. Two epochs end inside the unstable first phase of training, where
// the outcome is chaotic: a change at the level of rounding (oneDNN's AVX2 kernels instead of
// its AVX-512 ones, or the sanitizer build, whose own kernels do not fuse multiply-adds) moved
// seed 0's final accuracy between 39% and 57%, and seeds 0 to 5 ended between 50% and 87%. After
// four epochs the same seeds end between 77% and 100%, on either instruction set.
TEST(Train, LearnsTheSyntheticDataFarAboveChance) {
  TrainConfig c = small_config(small_dataset());
  c.epochs = 4;
  c.metrics_path = test::temp_path("train_metrics.jsonl");
  const TrainResult r = train(c);
  ASSERT_EQ(r.epochs.size(), 4u);
  EXPECT_GT(r.epochs.back().test_accuracy, 0.5);  // chance is 0.1
  std::ifstream in(c.metrics_path);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    for (const char* key : {"epoch", "step", "train_loss", "train_accuracy", "test_loss",
                            "test_accuracy", "lr", "epoch_time_s", "images_per_s"})
      EXPECT_TRUE(j.contains(key)) << key;
    ++lines;
  }
  EXPECT_EQ(lines, 4);
}

// The device's augmentation writes what the loader's threads write, so training is the same:
// in memory (one epoch and its evaluation) and streamed from the file window by window.
TEST(Train, AugmentingOnTheDeviceTrainsExactlyAsOnTheHost) {
  TrainConfig c = small_config(small_dataset(256, 100));
  c.epochs = 1;
  for (double budget_mb : {4096.0, 0.1}) {  // 0.1 MB: windows of 130 images
    c.augment_on = AugmentOn::host;
    const TrainResult host = train(c);
    c.augment_on = AugmentOn::device;
    const TrainResult device = train(c);
    EXPECT_EQ(device.step_losses, host.step_losses) << budget_mb << " MB";
    ASSERT_EQ(device.epochs.size(), host.epochs.size());
    if (!host.epochs.empty()) {
      EXPECT_EQ(device.epochs.back().test_loss, host.epochs.back().test_loss);
      EXPECT_EQ(device.epochs.back().test_accuracy, host.epochs.back().test_accuracy);
    }
  }
}

TEST(Train, RejectsBatchLargerThanTheData) {
  TrainConfig c = small_config(small_dataset());
  c.batch_size = 4096;
  EXPECT_THROW(train(c), Error);
}

}  // namespace
}  // namespace ringtrain
