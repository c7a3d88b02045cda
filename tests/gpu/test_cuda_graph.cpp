// --cuda-graph on a GPU: the trainer's steps replayed from a CUDA graph train the model to the
// bits of the same steps run eagerly (--deterministic: cuDNN's algorithms chosen by rank, not by
// timing), with a learning rate that changes every step (warmup, then cosine); their losses are
// the same and all of them reach the loss log, which a replayed step appends to on the device.
// What this adds to the CPU's replay tests (tests/unit/test_step_graph.cpp): CUDA's own stream
// capture, cuDNN and cuBLAS inside it, and the device-side loss log. Skipped without a GPU.
#include <cstring>

#include "../support/small_run.hpp"
#include "gpu_test_util.hpp"
#include "ringtrain/run/session.hpp"
#include "ringtrain/run/step.hpp"

namespace ringtrain {
namespace {

constexpr int64_t kSteps = 8;

TrainConfig graph_test_config(bool cuda_graph) {
  TrainConfig c = test::small_cuda_run(cuda_graph ? "graph" : "eager");
  c.deterministic = true;
  c.cuda_graph = cuda_graph;
  c.steps = kSteps;
  c.warmup_steps = 3;
  return c;
}

struct Trained {
  std::vector<float> params;
  std::vector<BatchResult> losses;
  int64_t replays = 0;
};

Trained train(bool cuda_graph) {
  TrainSession s(graph_test_config(cuda_graph));
  s.train_batches->start_epoch(0);
  for (int64_t step = 0; step < kSteps; ++step) train_step(s, s.schedule.at(step), step);
  Trained out;
  out.losses = take_step_losses(s);
  const Tensor& flat = s.model().parameters().flat_params();
  Tensor host = Tensor::zeros(flat.shape(), flat.dtype());
  s.backend().copy(flat, host);
  out.params.assign(host.data<float>(), host.data<float>() + host.numel());
  if (s.graph) out.replays = s.graph->replays();
  return out;
}

TEST(CudaTraining, GraphedStepsEqualEagerStepsBitForBit) {
  RT_SKIP_WITHOUT_GPU();
  const Trained eager = train(false);
  const Trained graphed = train(true);
  EXPECT_EQ(graphed.replays, kSteps - 2);  // two eager steps, then captured and replayed
  ASSERT_EQ(graphed.losses.size(), static_cast<size_t>(kSteps));
  ASSERT_EQ(eager.losses.size(), static_cast<size_t>(kSteps));
  for (size_t i = 0; i < eager.losses.size(); ++i) {
    EXPECT_EQ(graphed.losses[i].loss, eager.losses[i].loss) << "step " << i;
    EXPECT_EQ(graphed.losses[i].correct, eager.losses[i].correct) << "step " << i;
  }
  ASSERT_EQ(graphed.params.size(), eager.params.size());
  EXPECT_EQ(
      std::memcmp(graphed.params.data(), eager.params.data(), eager.params.size() * sizeof(float)),
      0);
}

}  // namespace
}  // namespace ringtrain
