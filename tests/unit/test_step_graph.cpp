// Replay semantics of --cuda-graph's step (StepGraph), on the CPU: a recording backend
// (recording_backend.hpp) keeps the captured step's ops with the host values they were issued
// with and replays them, as a CUDA graph does. Training through it must give the bits of the
// same steps run eagerly, with a learning rate that changes every step, a new batch every step
// and a batch of another shape in the middle: any host value baked into the captured step (a
// learning rate, AdamW's bias correction, the batch's address) would replay step 3's value.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "recording_backend.hpp"
#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/nn/forward_backward.hpp"
#include "ringtrain/optim/make_optimizer.hpp"
#include "ringtrain/run/step_graph.hpp"
#include "test_util.hpp"

namespace ringtrain {
namespace {

constexpr int kSteps = 10;

// Step t's batch: 4 images, or 3 at step 5 (a short batch drops the graph).
DeviceBatch batch_at(int t) {
  std::mt19937_64 rng(100 + t);
  const int n = t == 5 ? 3 : 4;
  DeviceBatch b{test::random_tensor<float>({n, 3, 16, 16}, rng), Tensor::zeros({n}, DType::i32)};
  for (int i = 0; i < n; ++i) b.labels.data<int>()[i] = (t + i) % 10;
  return b;
}

// A learning rate that differs at every step.
float lr_at(int t) {
  return 0.05f * (1.0f + 0.1f * static_cast<float>(t));
}

struct Trained {
  std::vector<float> params;
  std::vector<std::vector<float>> state;
  std::vector<LossValue> losses;
};

std::vector<float> values(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  std::memcpy(v.data(), t.raw(), t.nbytes());
  return v;
}

// kSteps steps of a small ResNet on `backend` with `kind`, through a StepGraph when `graph`.
Trained train(Backend& backend, OptimizerKind kind, bool graph, int64_t* replays = nullptr) {
  ResNetConfig c;
  c.depth = 18;
  c.width = 0.125;
  ResNet model(c, backend, DType::f32, 3);
  OptimizerConfig oc;
  oc.kind = kind;
  const auto optimizer = make_optimizer(oc, model.parameters(), backend);
  StepProfiler profiler(backend, ProfileMode::summary);
  StepGraph steps(backend);
  const auto work = [&](const DeviceBatch& in, StepProfiler*) {
    model.parameters().zero_grad(backend);
    record_forward_backward(model, in.images, in.labels, LossSettings{});
    optimizer->update();
  };
  for (int t = 0; t < kSteps; ++t) {
    const DeviceBatch batch = batch_at(t);
    optimizer->prepare(lr_at(t));
    if (graph) {
      steps.run(batch, profiler, work);
    } else {
      work(batch, nullptr);
    }
  }
  if (replays) *replays = steps.replays();
  Trained out{values(model.parameters().flat_params()), {}, backend.take_losses()};
  for (const OptimizerState& s : optimizer->state()) out.state.push_back(values(s.flat));
  return out;
}

class StepGraphReplay : public ::testing::TestWithParam<OptimizerKind> {};

TEST_P(StepGraphReplay, EqualsTheEagerStepsBitForBit) {
  CpuBackend eager(1), inner(1);
  test::RecordingBackend recording(inner);
  const Trained want = train(eager, GetParam(), false);
  int64_t replays = 0;
  const Trained got = train(recording, GetParam(), true, &replays);
  // Steps 0-1 eager, 2 captured, 3-4 replayed; 5 (short) and 6-7 eager; 8 captured, 9 replayed.
  EXPECT_EQ(replays, 5);
  EXPECT_EQ(got.params, want.params);
  EXPECT_EQ(got.state, want.state);
  ASSERT_EQ(got.losses.size(), want.losses.size());
  for (size_t i = 0; i < want.losses.size(); ++i) {
    EXPECT_EQ(got.losses[i].loss, want.losses[i].loss) << "step " << i;
    EXPECT_EQ(got.losses[i].correct, want.losses[i].correct) << "step " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryOptimizer, StepGraphReplay,
                         ::testing::Values(OptimizerKind::sgd, OptimizerKind::lars,
                                           OptimizerKind::adamw),
                         [](const auto& info) { return to_string(info.param); });

// The recording backend is the check above: a step that writes its learning rate inside the
// captured work, where a graph would bake it, is refused; one that reads a value back is too.
TEST(StepGraphReplay, HostWritesAndReadsInsideACaptureAreRefused) {
  CpuBackend inner(1);
  test::RecordingBackend recording(inner);
  Tensor hyper = recording.zeros({hyper_bytes()}, DType::u8);
  recording.begin_capture();
  EXPECT_NE(test::error_of([&] {
              write_rule(recording, SgdHyper{}, hyper);
            }).find("a write from the host inside a capture"),
            std::string::npos);
  EXPECT_NE(test::error_of([&] {
              recording.take_losses();
            }).find("the loss log read back inside a capture"),
            std::string::npos);
  recording.end_capture();
}

// An error inside the captured work leaves the device out of capture mode, keeping nothing:
// the next step runs and captures as the first did.
TEST(StepGraphReplay, AnErrorWhileCapturingEndsTheCapture) {
  CpuBackend inner(1);
  test::RecordingBackend recording(inner);
  StepProfiler profiler(recording, ProfileMode::off);
  StepGraph steps(recording);
  const DeviceBatch batch = batch_at(0);
  int calls = 0;
  const auto fails_when_captured = [&](const DeviceBatch&, StepProfiler* p) {
    ++calls;
    if (!p) throw Error("the work failed");
  };
  steps.run(batch, profiler, fails_when_captured);
  steps.run(batch, profiler, fails_when_captured);
  EXPECT_EQ(test::error_of([&] { steps.run(batch, profiler, fails_when_captured); }),
            "the work failed");
  EXPECT_EQ(calls, 3);
  EXPECT_NO_THROW(recording.begin_capture());  // no capture was left open
  recording.end_capture();
}

}  // namespace
}  // namespace ringtrain
