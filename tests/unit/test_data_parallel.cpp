// DataParallel on CPU replicas against one model that runs the batch's chunks in turn; its
// phases; and the configuration checks of --mode dp.
#include <gtest/gtest.h>

#include <random>

#include "dp_reference.hpp"
#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/optim/sgd.hpp"
#include "ringtrain/prof/report.hpp"
#include "ringtrain/run/setup.hpp"
#include "test_util.hpp"

namespace ringtrain {
namespace {

// DataParallel's replicas on the CPU, a thread each.
DeviceRequest cpu_replicas(int devices) {
  DeviceRequest r;
  r.replicas = devices;
  r.threads = devices;
  return r;
}

ResNetConfig tiny_resnet() {
  ResNetConfig mc;
  mc.depth = 18;
  mc.width = 0.125;
  return mc;
}

void random_batch(int64_t n, uint64_t seed, Tensor& images, Tensor& labels) {
  std::mt19937_64 rng(seed);
  images = test::random_tensor<float>({n, 3, 8, 8}, rng);
  labels = Tensor::zeros({n}, DType::i32);
  for (int64_t i = 0; i < n; ++i) labels.data<int32_t>()[i] = static_cast<int32_t>(rng() % 10);
}

// Two steps with an SGD update between them, so that the second step also checks that the
// replicas start from device 0's updated weights. The gradients are those of the same f32 ops
// summed in another order (replica by replica onto device 0): 1e-5 relative L2 is far above
// that rounding and far below any wrong chunk, scale or missed replica.
void check_equals_chunks_in_turn(int devices) {
  const ResNetConfig mc = tiny_resnet();
  CpuBackend backend(1);
  ResNet reference(mc, backend, DType::f32, 7);
  Sgd reference_sgd(reference.parameters(), backend, OptimizerConfig{});
  DataParallel dp(mc, make_backends(cpu_replicas(devices), nullptr), 7);
  Sgd dp_sgd(dp.primary().parameters(), dp.primary_backend(), OptimizerConfig{});
  for (int step = 0; step < 2; ++step) {
    Tensor x, y;
    random_batch(4 * devices, 100 + step, x, y);
    reference.parameters().zero_grad(backend);
    dp.primary().parameters().zero_grad(dp.primary_backend());
    const BatchResult want = test::chunks_in_turn(reference, x, y, devices);
    dp.step(x, y, LossSettings{});
    const std::vector<LossValue> losses = dp.take_losses();
    ASSERT_EQ(losses.size(), 1u);
    const LossValue got = losses[0];
    EXPECT_NEAR(got.loss, want.loss, 1e-5 * want.loss) << devices << " devices, step " << step;
    EXPECT_EQ(got.correct, want.correct) << devices << " devices, step " << step;
    EXPECT_LT(test::relative_l2(dp.primary().parameters().flat_grads(),
                                reference.parameters().flat_grads()),
              1e-5)
        << devices << " devices, step " << step;
    reference_sgd.step(0.1f);
    dp_sgd.step(0.1f);
  }
}

TEST(DataParallel, TwoReplicasEqualOneModelOnTheChunksInTurn) {
  check_equals_chunks_in_turn(2);
}

TEST(DataParallel, ThreeReplicasEqualOneModelOnTheChunksInTurn) {
  check_equals_chunks_in_turn(3);
}

PhaseTimes one_step_phases(DataParallel* dp) {
  CpuBackend single(1);
  ResNet model(tiny_resnet(), single, DType::f32, 7);
  Tensor x, y;
  random_batch(8, 5, x, y);
  Backend& timed = dp ? dp->primary_backend() : single;
  StepProfiler profiler(timed, ProfileMode::summary);
  if (dp)
    dp->step(x, y, LossSettings{}, &profiler);
  else
    forward_backward(model, x, y, LossSettings{}, &profiler);
  profiler.end_step();
  return profiler.last_step();
}

TEST(DataParallel, EveryPhaseOfAStepIsRecordedApart) {
  DataParallel dp(tiny_resnet(), make_backends(cpu_replicas(2), nullptr), 7);
  const PhaseTimes t = one_step_phases(&dp);
  for (Phase p :
       {Phase::replicate, Phase::scatter, Phase::forward, Phase::backward, Phase::comm_wait})
    EXPECT_GT(t[static_cast<int>(p)], 0.0) << phase_name(p);
  const std::string table = format_phase_table(t, 1);
  for (const char* name : {"replicate", "scatter", "forward", "backward", "comm_wait"})
    EXPECT_NE(table.find(name), std::string::npos) << table;
}

TEST(DataParallel, OtherStepsKeepTheirPhaseRowsAndKeys) {
  const PhaseTimes t = one_step_phases(nullptr);
  EXPECT_EQ(t[static_cast<int>(Phase::replicate)], 0.0);
  EXPECT_EQ(t[static_cast<int>(Phase::scatter)], 0.0);
  const std::string table = format_phase_table(t, 1);
  EXPECT_EQ(table.find("replicate"), std::string::npos) << table;
  EXPECT_EQ(table.find("scatter"), std::string::npos) << table;
  const nlohmann::json shares = phases_json(phase_shares(t));
  nlohmann::json keys = nlohmann::json::array();
  for (auto it = shares.begin(); it != shares.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, nlohmann::json(
                      {"backward", "comm_wait", "copy", "data", "forward", "optimizer", "other"}));
}

template <class E, class F>
void expect_error(F f, const std::string& text) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one saying: " << text;
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

TrainConfig dp_config() {
  TrainConfig c;
  c.mode = Mode::dp;
  c.batch_size = 32;
  return c;
}

TEST(DataParallelConfig, ShareDeviceIsAcceptedOnTheCpuAndOnlyWithModeDp) {
  TrainConfig c = dp_config();
  c.dp_share_device = true;
  EXPECT_EQ(per_rank_config(c, 1).devices, 2);
  c.mode = Mode::ddp;
  expect_error<ConfigError>([&] { per_rank_config(c, 1); }, "--dp-share-device is for --mode dp");
}

TEST(DataParallelConfig, DevicesDefaultAndAreCheckedAgainstTheVisibleGpus) {
  TrainConfig c = dp_config();
  EXPECT_EQ(dp_devices(c, 0), 2);  // CPU replicas
  c.device = DeviceKind::cuda;
  EXPECT_EQ(dp_devices(c, 4), 4);
  c.devices = 3;
  EXPECT_EQ(dp_devices(c, 4), 3);
  c.devices = 8;
  expect_error<ConfigError>([&] { dp_devices(c, 2); }, "--devices 8, but only 2 CUDA device(s)");
  expect_error<ConfigError>([&] { dp_devices(c, 0); }, "no CUDA device is visible");
  c.dp_share_device = true;
  EXPECT_EQ(dp_devices(c, 1), 8);
  c.devices = 0;
  EXPECT_EQ(dp_devices(c, 1), 2);
}

TEST(DataParallelConfig, ABatchThatDoesNotSplitIsRefused) {
  TrainConfig c = dp_config();
  c.devices = 3;
  expect_error<ConfigError>([&] { per_rank_config(c, 1); },
                            "splits the batch of 32 evenly over 3 devices");
}

}  // namespace
}  // namespace ringtrain
