// What a run does with the checkpoints of its folder: a checkpoint that verifies but cannot be
// resumed is neither resumed nor counted by --keep, another run's is never counted or replaced,
// the folder is claimed by one run at a time, a temporary another process writes is left alone,
// and steps past 99,999,999 are read back.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/checkpoint/checkpoint.hpp"
#include "ringtrain/checkpoint/checkpoint_folder.hpp"
#include "ringtrain/checkpoint/resume_position.hpp"
#include "ringtrain/nn/resnet.hpp"
#include "ringtrain/optim/make_optimizer.hpp"
#include "test_util.hpp"

namespace ringtrain {
namespace {

namespace fs = std::filesystem;
using test::error_of;
using test::temp_path;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A tiny model with an optimizer, written as checkpoints of one run (the default identity).
struct TinyRun {
  explicit TinyRun(OptimizerKind kind = OptimizerKind::sgd)
      : model(config(), backend, DType::f32, 3) {
    OptimizerConfig oc;
    oc.kind = kind;
    optimizer = make_optimizer(oc, model.parameters(), backend);
  }
  static ResNetConfig config() {
    ResNetConfig mc;
    mc.depth = 18;
    mc.width = 1.0 / 64;
    mc.classes = 2;
    return mc;
  }
  ParameterSet& params() { return model.parameters(); }
  // Element 0 of the first tensor named "...`suffix`" in `flat` (whose tensors `infos` lists).
  float& element(Tensor& flat, const std::vector<ParamInfo>& infos, const std::string& suffix) {
    for (const ParamInfo& info : infos)
      if (info.name.size() >= suffix.size() &&
          info.name.compare(info.name.size() - suffix.size(), suffix.size(), suffix) == 0)
        return flat.data<float>()[info.offset];
    throw Error("no tensor named ..." + suffix);
  }
  float& running_var() {
    return element(params().flat_buffers(), params().buffer_infos(), "running_var");
  }
  float& state(const std::string& name) {
    return element(optimizer->state(name), params().param_infos(), "weight");
  }
  // Writes the checkpoint of `step` into `dir` (a meta of this run otherwise) and returns its path.
  std::string write(const std::string& dir, int64_t step, CheckpointMeta meta = {}) {
    fs::create_directories(dir);
    meta.step = step;
    meta.optimizer = to_string(optimizer->kind());
    const std::string path = checkpoint_path(dir, step);
    write_checkpoint(path, backend, params(), optimizer->state(), meta);
    return path;
  }

  CpuBackend backend{1};
  ResNet model;
  std::unique_ptr<Optimizer> optimizer;
};

CheckpointMeta identity(const std::string& optimizer = "sgd") {
  CheckpointMeta m;
  m.optimizer = optimizer;
  return m;
}

std::string fresh_dir(const std::string& name) {
  const std::string dir = temp_path(name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(UnloadableCheckpoint, VerifiesButIsRefusedNamingTheValue) {
  TinyRun run;
  run.running_var() = std::numeric_limits<float>::infinity();
  const std::string path = run.write(fresh_dir("unloadable"), 9);
  EXPECT_EQ(unloadable_state(run.backend, run.params(), run.optimizer->state()).empty(), false);
  for (const auto& f : {std::function<void()>([&] { verify_checkpoint(path); }),
                        std::function<void()>([&] { inspect_checkpoint(path); })}) {
    const std::string message = error_of(f);
    EXPECT_TRUE(contains(message, "every checksum matches, but no run can resume from it"))
        << message;
    EXPECT_TRUE(contains(message, "running_var holds inf at index 0")) << message;
  }
  EXPECT_THROW(verify_checkpoint(path), UnloadableCheckpoint);
}

TEST(UnloadableCheckpoint, ResumeAutoTakesTheNewestThatLoads) {
  TinyRun run;
  const std::string dir = fresh_dir("resume_auto_loadable");
  const std::string good = run.write(dir, 8);
  run.running_var() = std::numeric_limits<float>::infinity();
  run.write(dir, 9);
  run.write(dir, 10);
  std::vector<std::string> skipped;
  EXPECT_EQ(newest_checkpoint(dir, &skipped), good);
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_TRUE(contains(skipped[0], "ckpt-step00000010.h5: every checksum matches")) << skipped[0];
}

// Two unloadable checkpoints newer than the good one, and --keep 2: the good one stays.
TEST(UnloadableCheckpoint, KeepNeverCountsIt) {
  TinyRun run;
  const std::string dir = fresh_dir("keep_unloadable");
  const std::string good = run.write(dir, 8);
  run.running_var() = -1.0f;
  run.write(dir, 9);
  run.write(dir, 10);
  run.running_var() = 1.0f;
  const std::string written = run.write(dir, 12);
  CheckpointRotation rotation(dir, 2, identity());
  rotation.trust(written);
  rotation.prune(written);
  EXPECT_TRUE(fs::exists(good));
  EXPECT_TRUE(fs::exists(checkpoint_path(dir, 9)));  // this run's: left, not counted
  const std::string newer = run.write(dir, 14);
  rotation.trust(newer);
  rotation.prune(newer);
  EXPECT_TRUE(fs::exists(written));
  EXPECT_FALSE(fs::exists(good));  // now two good ones are newer
}

TEST(UnloadableCheckpoint, AdamWStateNoStepWritesIsRefused) {
  struct Case {
    const char* name;
    float value;
    const char* expected;
  };
  for (const Case& c :
       {Case{"exp_avg_sq", -1e-3f, "a negative second moment"},
        Case{"exp_avg", 3e38f, "a first moment larger than"},
        Case{"exp_avg", -std::numeric_limits<float>::quiet_NaN(), "not a finite"}}) {
    TinyRun run(OptimizerKind::adamw);
    run.state(c.name) = c.value;
    const std::string path = run.write(fresh_dir("adamw_state"), 3);
    TinyRun fresh(OptimizerKind::adamw);
    const std::string message = error_of(
        [&] { load_checkpoint(path, fresh.backend, fresh.params(), fresh.optimizer.get()); });
    EXPECT_TRUE(contains(message, std::string("/optimizer/") + c.name + "/")) << message;
    EXPECT_TRUE(contains(message, c.expected)) << message;
    EXPECT_THROW(verify_checkpoint(path), UnloadableCheckpoint) << c.name;
  }
}

TEST(UnloadableCheckpoint, AnUpdateCountBeyondTheStepsIsRefused) {
  for (int64_t updates : {int64_t{4}, int64_t{-1}, std::numeric_limits<int64_t>::max() - 3}) {
    TinyRun run;
    CheckpointMeta meta;
    meta.optimizer_steps = updates;
    const std::string path = run.write(fresh_dir("update_count"), 3, meta);
    TinyRun fresh;
    const std::string message = error_of(
        [&] { load_checkpoint(path, fresh.backend, fresh.params(), fresh.optimizer.get()); });
    EXPECT_TRUE(contains(message, str_cat("counts ", updates, " optimizer updates in 3 steps")))
        << message;
    EXPECT_THROW(verify_checkpoint(path), UnloadableCheckpoint);
  }
}

TEST(UnloadableCheckpoint, AnEmptyOrMissingOptimizerIsNamed) {
  TinyRun run;
  const std::string dir = fresh_dir("optimizer_name");
  CheckpointMeta meta;
  const std::string path = checkpoint_path(dir, 2);
  meta.optimizer = "";
  write_checkpoint(path, run.backend, run.params(), run.optimizer->state(), meta);
  const std::string message =
      error_of([&] { load_checkpoint(path, run.backend, run.params(), run.optimizer.get()); });
  EXPECT_TRUE(contains(message, "optimizer '', which this ringtrain does not have")) << message;
  EXPECT_FALSE(contains(message, "--optimizer ,")) << message;
  meta.optimizer = "adamw";  // with SGD's state: the moments are missing
  write_checkpoint(path, run.backend, run.params(), run.optimizer->state(), meta);
  EXPECT_TRUE(contains(error_of([&] { verify_checkpoint(path); }),
                       "its /optimizer holds {momentum} where adamw keeps {exp_avg, exp_avg_sq}"));
}

TEST(CheckpointRotation, AnotherOptimizersCheckpointIsAnotherRuns) {
  TinyRun sgd;
  const std::string dir = fresh_dir("rotation_optimizer");
  const std::string sgd_path = sgd.write(dir, 2);
  EXPECT_TRUE(contains(run_mismatch(read_checkpoint_meta(sgd_path), identity("adamw")),
                       "--optimizer sgd (this run: --optimizer adamw)"));
  TinyRun adamw(OptimizerKind::adamw);
  const std::string written = adamw.write(dir, 6);
  CheckpointRotation rotation(dir, 1, identity("adamw"));
  rotation.trust(written);
  rotation.prune(written);
  EXPECT_TRUE(fs::exists(sgd_path));
  EXPECT_THROW(rotation.refuse_to_replace(sgd_path), Error);
  EXPECT_THROW(rotation.refuse_steps_of_other_runs(0, 4, ""), ConfigError);
  EXPECT_NO_THROW(rotation.refuse_steps_of_other_runs(3, 10, ""));
  EXPECT_NO_THROW(rotation.refuse_to_replace(written));
}

TEST(CheckpointRotation, StepsPastEightDigitsAreRead) {
  TinyRun run;
  const std::string dir = fresh_dir("nine_digits");
  const std::string old = run.write(dir, 99999999);
  const std::string newer = run.write(dir, 100000000);
  EXPECT_EQ(fs::path(newer).filename(), "ckpt-step100000000.h5");
  EXPECT_EQ(newest_checkpoint(dir, nullptr), newer);
  CheckpointRotation rotation(dir, 1, identity());
  rotation.trust(newer);
  rotation.prune(newer);
  EXPECT_FALSE(fs::exists(old));
  const std::string largest = run.write(dir, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(newest_checkpoint(dir, nullptr), largest);
}

TEST(CheckpointFolderClaim, OneRunAtATime) {
  const std::string dir = fresh_dir("claim");
  {
    CheckpointFolder first = prepare_checkpoint_dir(dir, "pid 1 on node7: the first run");
    const std::string message = error_of([&] { prepare_checkpoint_dir(dir, "the second run"); });
    EXPECT_TRUE(contains(message, "is in use by another run (pid 1 on node7: the first run)"))
        << message;
    EXPECT_TRUE(contains(message, "its own --checkpoint-dir")) << message;
    EXPECT_THROW(prepare_checkpoint_dir(dir, "the second run"), ConfigError);
  }
  EXPECT_NO_THROW(prepare_checkpoint_dir(dir, "the second run, after the first ended"));
}

// A temporary another process holds (is writing) stays; one an interrupted run left goes.
TEST(CheckpointFolderClaim, RemovesOnlyTheTemporariesNobodyWrites) {
  const std::string dir = fresh_dir("temporaries");
  const std::string left = dir + "/ckpt-step00000004.h5.tmp-0a1b2c";
  const std::string live = dir + "/ckpt-step00000006.h5.tmp-3d4e5f";
  for (const std::string& path : {left, live}) {
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(close(fd), 0);
  }
  const int held = open(live.c_str(), O_RDONLY);
  ASSERT_EQ(flock(held, LOCK_EX), 0);
  const CheckpointFolder folder = prepare_checkpoint_dir(dir, "test");
  EXPECT_EQ(folder.removed, std::vector<std::string>{left});
  EXPECT_FALSE(fs::exists(left));
  EXPECT_TRUE(fs::exists(live));
  ASSERT_EQ(close(held), 0);
}

}  // namespace
}  // namespace ringtrain
