// A ResNet-50 training step of the real CUDA backend, counted by the launch ledger (ledger.hpp):
// the launches, library calls, host waits and allocations of one step in steady state, on a
// machine without a GPU. The counts are the step's shape, not its speed: they do not depend on
// the batch size, so a small batch keeps the stand-in "device" memory small.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include "../support/small_run.hpp"
#include "ledger.hpp"
#include "ringtrain/backend/cuda/cuda_backend.hpp"
#include "ringtrain/nn/forward_backward.hpp"
#include "ringtrain/optim/sgd.hpp"
#include "ringtrain/run/session.hpp"
#include "ringtrain/run/step.hpp"

namespace ringtrain {
namespace {

// The counts of one bf16 training step of ResNet-50-cifar (the trainer's step: the loss stays on
// the device), after two steps that search the algorithms and fill the caches.
ledger::Counts one_step_in_steady_state(int64_t* norm_layers) {
  ledger::set_compute_capability(RINGTRAIN_LEDGER_ARCHITECTURE / 10,
                                 RINGTRAIN_LEDGER_ARCHITECTURE % 10);
  CudaOptions o;
  o.compute = DType::bf16;
  auto backend = make_cuda_backend(o);
  ResNetConfig config;
  config.depth = 50;
  ResNet model(config, *backend, DType::f32, 0);
  Sgd sgd(model.parameters(), *backend, OptimizerConfig{});
  const Tensor images = backend->zeros({4, 3, 32, 32}, DType::bf16);
  const Tensor labels = backend->zeros({4}, DType::i32);
  const auto step = [&] {
    model.parameters().zero_grad(*backend);
    record_forward_backward(model, images, labels, LossSettings{});
    sgd.step(0.05f);
  };
  step();
  step();
  ledger::reset();
  step();
  const ledger::Counts counts = ledger::counts();
  *norm_layers = 0;
  for (const ParamInfo& p : model.parameters().param_infos())
    *norm_layers += p.kind == ParamKind::norm_weight ? 1 : 0;
  return counts;
}

// The ledger of the step, for the log: totals, then each kernel and library call by count.
void print(const ledger::Counts& c) {
  std::printf(
      "one step: %lld launches, %lld cuDNN/cuBLAS calls that run on the device, "
      "%lld descriptor calls, %lld copies and fills, %lld host waits (and %lld for "
      "earlier steps' work), %lld allocations\n",
      static_cast<long long>(c.launches), static_cast<long long>(c.library_work),
      static_cast<long long>(c.descriptors), static_cast<long long>(c.copies),
      static_cast<long long>(c.host_waits), static_cast<long long>(c.earlier_waits),
      static_cast<long long>(c.allocations));
  std::vector<std::pair<int64_t, std::string>> rows;
  for (const auto& [name, n] : c.kernels) rows.emplace_back(n, name.substr(0, 160));
  for (const auto& [name, n] : c.calls) rows.emplace_back(n, name);
  std::sort(rows.rbegin(), rows.rend());
  for (const auto& [n, name] : rows)
    std::printf("%6lld  %s\n", static_cast<long long>(n), name.c_str());
}

TEST(LaunchLedger, ResNet50StepBudget) {
  int64_t norm_layers = 0;
  const ledger::Counts c = one_step_in_steady_state(&norm_layers);
  print(c);
  ASSERT_EQ(norm_layers, 53);
  EXPECT_EQ(c.kernels.count("unregistered"), 0u);
  // Batch norm: at most two launches forward (the sums whose last block writes the statistics,
  // then the normalisation) and two backward (the gradient sums whose last block writes dgamma,
  // dbeta and dx's table, then dx), and no hand-over of its gradients. Each block's end is one
  // launch (NormAddRelu) that applies its last batch norm and its shortcut's, and adds: of
  // ResNet-50's 53 batch norms, 16 end a block and 4 are projections.
  EXPECT_EQ(c.launches_of("SumAndSquare"), norm_layers);
  EXPECT_EQ(c.launches_of("NormAddRelu"), 16);
  EXPECT_EQ(c.launches_of("ChannelAffine"), norm_layers - 16 - 4);
  EXPECT_EQ(c.launches_of("GradientSums"), norm_layers);
  EXPECT_EQ(c.launches_of("InputGrad"), norm_layers);
  // The bf16 gradients handed over to the f32 ones in one pass, at the end of backward.
  EXPECT_EQ(c.launches_of("AccumulateAndClear"), 1);
  // zero_grad fills the f32 gradients only: the bf16 ones are clear after every hand-over.
  EXPECT_EQ(c.launches_of("kernels::Fill<"), 1);
  // The loss: one launch (the rows, then their sums and the label check by the last block).
  EXPECT_EQ(c.launches_of("SoftmaxCrossEntropyRow"), 1);
  EXPECT_EQ(c.launches_of("FirstBadLabel"), 1);
  // The step waits for nothing on the host, allocates nothing and builds no cuDNN descriptor.
  EXPECT_EQ(c.host_waits, 0);
  EXPECT_EQ(c.allocations, 0);
  EXPECT_EQ(c.descriptors, 0);
  // 53 convolutions: forward, data gradient (not the stem's) and filter gradient.
  EXPECT_EQ(c.calls.at("cudnnConvolutionForward"), 53);
  EXPECT_EQ(c.calls.at("cudnnConvolutionBackwardData"), 52);
  EXPECT_EQ(c.calls.at("cudnnConvolutionBackwardFilter"), 53);
}

// The trainer's own step (train_step: the loader's batches through the prefetcher, the
// strategy, the profiler's marks; then, as the trainer's loop does, the profiler's "other" phase
// and the step's end) on a small ResNet, one rank, counted at step `counted` (from 0): at the
// fourth, the profiler reads the marks of a step that is two steps old. With --cuda-graph
// when `cuda_graph`.
ledger::Counts trainer_step(int64_t counted, bool cuda_graph) {
  ledger::set_compute_capability(RINGTRAIN_LEDGER_ARCHITECTURE / 10,
                                 RINGTRAIN_LEDGER_ARCHITECTURE % 10);
  TrainConfig c = test::small_cuda_run(cuda_graph ? "graph" : "eager");
  c.steps = 8;
  c.cuda_graph = cuda_graph;
  TrainSession s(c);
  s.train_batches->start_epoch(0);
  const auto step = [&](int64_t at) {
    train_step(s, s.schedule.at(at), at);
    s.profiler->start(Phase::other);
    s.profiler->end_step();
  };
  for (int64_t at = 0; at < counted; ++at) step(at);
  ledger::reset();
  step(counted);
  return ledger::counts();
}

// The trainer's step with the profiler on waits only for earlier steps' work: the copy of its
// batch (issued a step ago) and the marks of the step two steps back.
TEST(LaunchLedger, TrainerStepWaitsForNoWorkOfItsOwn) {
  const ledger::Counts c = trainer_step(3, false);
  print(c);
  EXPECT_EQ(c.host_waits, 0);
  EXPECT_GE(c.earlier_waits, 1);
  EXPECT_EQ(c.allocations, 0);
  EXPECT_EQ(c.descriptors, 0);
}

// --cuda-graph: the third step captures its work (the stand-in throws on any wait,
// allocation or copy from or to the host inside the capture), and a later step is one graph
// launch: its kernels and library calls are not issued from the host, it waits for none of its
// own work and allocates nothing. What the host still issues outside the graph: the batch's
// copies, the learning rate's write and the profiler's marks.
TEST(LaunchLedger, CudaGraphStepIsOneGraphLaunch) {
  const ledger::Counts capture = trainer_step(2, true);
  EXPECT_GT(capture.captured, 100);
  EXPECT_EQ(capture.graph_launches, 1);
  const ledger::Counts c = trainer_step(4, true);
  print(c);
  EXPECT_EQ(c.graph_launches, 1);
  EXPECT_EQ(c.captured, 0);
  EXPECT_EQ(c.launches, 0);
  EXPECT_EQ(c.library_work, 0);
  EXPECT_EQ(c.host_waits, 0);
  EXPECT_EQ(c.allocations, 0);
  EXPECT_EQ(c.descriptors, 0);
}

}  // namespace
}  // namespace ringtrain
