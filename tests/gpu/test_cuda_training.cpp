// The whole model on the GPU: a small ResNet step in f32 against the CPU backend, a short bf16
// run whose loss falls, and bit-identical repeats with deterministic cuDNN algorithms.
// Skipped, with the reason, where there is no GPU.
#include <cmath>
#include <numeric>

#include "gpu_test_util.hpp"
#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/nn/forward_backward.hpp"
#include "ringtrain/optim/sgd.hpp"

namespace ringtrain {
namespace {

using test::download;
using test::random_f32;
using test::upload;

struct Batch {
  Tensor images, labels;  // host: f32 NCHW and i32
};

Batch random_batch(int n, uint64_t seed, int size = 32) {
  std::mt19937_64 rng(seed);
  Batch b{random_f32({n, 3, size, size}, rng), Tensor::zeros({n}, DType::i32)};
  for (int i = 0; i < n; ++i) b.labels.data<int>()[i] = static_cast<int>(rng() % 10);
  return b;
}

constexpr float kLr = 0.05f;

// One SGD step of `model` on the batch (already on the backend's device); returns the loss.
double train_step(ResNet& model, Backend& backend, Sgd& sgd, const Tensor& images,
                  const Tensor& labels) {
  model.parameters().zero_grad(backend);
  const double loss = forward_backward(model, images, labels, LossSettings{}).loss;
  sgd.step(kLr);
  return loss;
}

Tensor device_labels(Backend& gpu, const Tensor& labels) {
  Tensor dev = gpu.zeros(labels.shape(), DType::i32);
  gpu.copy(labels, dev);
  return dev;
}

// How far `got` is from `want` as whole tensors: ||got - want|| / ||want|| and the cosine of
// the angle between them.
struct TensorError {
  double relative_l2, cosine;
};

TensorError tensor_error(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.shape(), want.shape());
  double diff = 0, gg = 0, ww = 0, gw = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = got.data<float>()[i], w = want.data<float>()[i];
    diff += (g - w) * (g - w);
    gg += g * g;
    ww += w * w;
    gw += g * w;
  }
  if (ww == 0) return {std::sqrt(diff), gg == 0 ? 1.0 : 0.0};
  return {std::sqrt(diff / ww), gg == 0 ? 0.0 : gw / std::sqrt(gg * ww)};
}

double l2_norm(const Tensor& t) {
  double ss = 0;
  for (int64_t i = 0; i < t.numel(); ++i) ss += double(t.data<float>()[i]) * t.data<float>()[i];
  return std::sqrt(ss);
}

// Note: f32 on the GPU is true f32 (no TF32), so it differs from the CPU only in summation
// order, ~1e-6 relative. But a ReLU or max-pool decision on a pre-activation near zero can
// flip, and then a few gradient elements differ by their whole size: a per-element bound fails
// on correct code, while the error of the whole tensor stays small. The bounds: gradients
// within 1e-3 relative L2 error and a cosine above 0.9999. The first step from zero momentum
// moves a parameter by -lr (g + wd p), so its error is lr times the gradient's, plus rounding:
// within lr * 1e-3 * ||g|| + 1e-6 * ||p|| in L2. (A relative bound on p fails on correct code
// for the batch-norm biases, which start at 0: after one step they are all gradient.)
TEST(CudaTraining, SmallResNetStepInF32MatchesTheCpu) {
  RT_SKIP_WITHOUT_GPU();
  ResNetConfig config;
  config.depth = 18;
  config.width = 0.25;
  CpuBackend cpu;
  auto gpu = test::gpu_backend(DType::f32);
  ResNet cpu_model(config, cpu, DType::f32, 7), gpu_model(config, *gpu, DType::f32, 7);
  Sgd cpu_sgd(cpu_model.parameters(), cpu, OptimizerConfig{}),
      gpu_sgd(gpu_model.parameters(), *gpu, OptimizerConfig{});
  const Batch b = random_batch(8, 3, 16);
  const double cpu_loss = train_step(cpu_model, cpu, cpu_sgd, b.images, b.labels);
  const double gpu_loss = train_step(gpu_model, *gpu, gpu_sgd, upload(*gpu, b.images, DType::f32),
                                     device_labels(*gpu, b.labels));
  EXPECT_NEAR(gpu_loss, cpu_loss, 1e-4 * cpu_loss);
  // Per parameter: a 4-D slice of the device buffer is KRSC, download turns it back to KCRS.
  ParameterSet &want = cpu_model.parameters(), &got = gpu_model.parameters();
  for (size_t id = 0; id < want.param_infos().size(); ++id) {
    const int i = static_cast<int>(id);
    SCOPED_TRACE(want.param_infos()[id].name);
    const TensorError grad = tensor_error(download(*gpu, got.grad(i)), want.grad(i));
    EXPECT_LE(grad.relative_l2, 1e-3);
    EXPECT_GE(grad.cosine, 0.9999);
    const double param_error =
        tensor_error(download(*gpu, got.param(i)), want.param(i)).relative_l2 *
        l2_norm(want.param(i));
    EXPECT_LE(param_error, kLr * 1e-3 * l2_norm(want.grad(i)) + 1e-6 * l2_norm(want.param(i)));
  }
}

// --accum-steps under bf16: four micro-batches' gradients accumulate in the f32 gradients, so
// they equal the sum of the four computed one at a time (added on the host in double) within
// f32 rounding; summed in bf16 they would be off by about 1e-3. Deterministic algorithms, so
// each micro-batch's gradient is the same bits in both runs.
TEST(CudaTraining, Bf16MicroBatchesAccumulateInF32) {
  RT_SKIP_WITHOUT_GPU();
  auto gpu = test::gpu_backend(DType::bf16, true);
  ResNetConfig config;
  config.depth = 18;
  config.width = 0.25;
  ResNet model(config, *gpu, DType::f32, 7);
  ParameterSet& params = model.parameters();
  std::vector<Tensor> images, labels;
  for (int m = 0; m < 4; ++m) {
    const Batch b = random_batch(8, 20 + m, 16);
    images.push_back(upload(*gpu, b.images, DType::bf16));
    labels.push_back(device_labels(*gpu, b.labels));
  }
  const LossSettings quarter{0.0f, 0.25};
  params.zero_grad(*gpu);
  for (int m = 0; m < 4; ++m) forward_backward(model, images[m], labels[m], quarter);
  const Tensor accumulated = download(*gpu, params.flat_grads());
  Tensor sum = Tensor::zeros(accumulated.shape(), DType::f32);
  std::vector<double> exact(static_cast<size_t>(sum.numel()), 0.0);
  for (int m = 0; m < 4; ++m) {
    params.zero_grad(*gpu);
    forward_backward(model, images[m], labels[m], quarter);
    const Tensor one = download(*gpu, params.flat_grads());
    for (int64_t i = 0; i < one.numel(); ++i) exact[static_cast<size_t>(i)] += one.data<float>()[i];
  }
  for (int64_t i = 0; i < sum.numel(); ++i)
    sum.data<float>()[i] = static_cast<float>(exact[static_cast<size_t>(i)]);
  EXPECT_LE(tensor_error(accumulated, sum).relative_l2, 1e-6);
}

// Twenty steps on one batch of a ResNet-18 (width 0.5) in bf16 with f32 master weights.
std::vector<double> bf16_losses(Backend& gpu, int steps) {
  ResNetConfig config;
  config.depth = 18;
  config.width = 0.5;
  ResNet model(config, gpu, DType::f32, 11);
  Sgd sgd(model.parameters(), gpu, OptimizerConfig{});
  const Batch b = random_batch(32, 5);
  const Tensor images = upload(gpu, b.images, gpu.compute_dtype());
  const Tensor labels = device_labels(gpu, b.labels);
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) losses.push_back(train_step(model, gpu, sgd, images, labels));
  const Tensor master = download(gpu, model.parameters().flat_params());
  losses.push_back(
      std::accumulate(master.data<float>(), master.data<float>() + master.numel(), 0.0));
  return losses;
}

TEST(CudaTraining, Bf16LossFallsOnABatchItCanMemorise) {
  RT_SKIP_WITHOUT_GPU();
  auto gpu = test::gpu_backend(DType::bf16);
  const std::vector<double> losses = bf16_losses(*gpu, 20);
  EXPECT_GT(losses.front(), 1.5);
  EXPECT_LT(losses[19], 0.5 * losses.front());
}

TEST(CudaTraining, DeterministicAlgorithmsRepeatBitForBit) {
  RT_SKIP_WITHOUT_GPU();
  auto first = test::gpu_backend(DType::bf16, true);
  const std::vector<double> a = bf16_losses(*first, 3);
  auto second = test::gpu_backend(DType::bf16, true);
  const std::vector<double> b = bf16_losses(*second, 3);
  EXPECT_EQ(a, b);  // losses and the sum of the master weights, exactly
}

}  // namespace
}  // namespace ringtrain
