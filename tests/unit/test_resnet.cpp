// Whole-model facts: parameter counts and MACs against PyTorch's counts for the same
// definitions (torchvision-style ResNets), and a small ResNet that must overfit a fixed batch.
#include <gtest/gtest.h>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/nn/forward_backward.hpp"
#include "ringtrain/optim/sgd.hpp"
#include "test_util.hpp"

namespace ringtrain {
namespace {

struct Reference {
  int depth;
  Stem stem;
  double width;
  int64_t params, macs;
};

class ResNetCounts : public ::testing::TestWithParam<Reference> {};

TEST_P(ResNetCounts, MatchPyTorch) {
  const Reference r = GetParam();
  CpuBackend backend(1);
  ResNetConfig c;
  c.depth = r.depth;
  c.stem = r.stem;
  c.width = r.width;
  ResNet model(c, backend, DType::f32, 1);
  EXPECT_EQ(model.parameter_count(), r.params);
  EXPECT_EQ(model.macs_per_image(32, 32), r.macs);
}

INSTANTIATE_TEST_SUITE_P(Design, ResNetCounts,
                         ::testing::Values(Reference{50, Stem::cifar, 1.0, 23520842, 1297829888},
                                           Reference{34, Stem::cifar, 1.0, 21282122, 1159402496},
                                           Reference{18, Stem::cifar, 1.0, 11173962, 555422720},
                                           Reference{18, Stem::cifar, 0.25, 701466, 35046656},
                                           Reference{50, Stem::imagenet, 1.0, 23528522, 83431424}));

TEST(ResNet, RejectsUnknownDepthAndStem) {
  CpuBackend backend(1);
  ResNetConfig c;
  c.depth = 42;
  EXPECT_THROW(ResNet(c, backend, DType::f32, 1), Error);
  EXPECT_THROW(parse<Stem>("--stem", "tiny"), ConfigError);
}

TEST(ResNet, ParameterGradientsFillTheBufferFromTheEnd) {
  // The fc parameters were registered last, so they sit at the end of the flat buffer.
  CpuBackend backend(1);
  ResNetConfig c;
  c.depth = 18;
  c.width = 0.125;
  ResNet model(c, backend, DType::f32, 3);
  const auto& infos = model.parameters().param_infos();
  EXPECT_EQ(infos.front().name, "stem.conv.weight");
  EXPECT_EQ(infos.back().name, "fc.bias");
  EXPECT_EQ(infos.back().offset + 10, model.parameters().flat_size());
}

// forward_backward adds to the gradients, so two calls on one batch give twice one call's
// gradients, and zero_grad starts over: gradient accumulation needs no buffer of its own.
TEST(ResNet, ForwardBackwardAddsToTheGradients) {
  CpuBackend backend(2);
  ResNetConfig c;
  c.depth = 18;
  c.width = 0.125;
  ResNet model(c, backend, DType::f32, 3);
  std::mt19937_64 rng(5);
  Tensor images = test::random_tensor<float>({4, 3, 8, 8}, rng);
  Tensor labels = Tensor::zeros({4}, DType::i32);
  for (int i = 0; i < 4; ++i) labels.data<int>()[i] = (7 * i) % 10;
  ParameterSet& p = model.parameters();
  const BatchResult once = forward_backward(model, images, labels, LossSettings{0.0f, 0.5});
  const std::vector<float> g(p.flat_grads().data<float>(),
                             p.flat_grads().data<float>() + p.flat_size());
  const BatchResult again = forward_backward(model, images, labels, LossSettings{0.0f, 0.5});
  EXPECT_EQ(again.loss, once.loss);
  EXPECT_EQ(again.correct, once.correct);
  double max_error = 0, max_grad = 0;
  for (int64_t i = 0; i < p.flat_size(); ++i) {
    max_error = std::max(max_error, std::abs(double(p.flat_grads().data<float>()[i]) - 2 * g[i]));
    max_grad = std::max(max_grad, std::abs(double(g[i])));
  }
  EXPECT_GT(max_grad, 0);
  EXPECT_LT(max_error, 1e-5 * max_grad);
  p.zero_grad(backend);
  forward_backward(model, images, labels, LossSettings{0.0f, 0.5});
  for (int64_t i = 0; i < p.flat_size(); ++i)
    ASSERT_EQ(p.flat_grads().data<float>()[i], g[i]) << "element " << i;
}

TEST(ResNet, SmallModelOverfitsAFixedBatch) {
  CpuBackend backend(2);
  ResNetConfig c;
  c.depth = 18;
  c.width = 0.25;
  ResNet model(c, backend, DType::f32, 7);
  OptimizerConfig sc;
  sc.weight_decay = 0;
  Sgd sgd(model.parameters(), backend, sc);
  std::mt19937_64 rng(11);
  const int n = 64;
  Tensor images = test::random_tensor<float>({n, 3, 16, 16}, rng);
  Tensor labels = Tensor::zeros({n}, DType::i32);
  for (int i = 0; i < n; ++i) labels.data<int>()[i] = i % 10;
  int64_t correct = 0;
  int step = 0;
  for (; step < 150 && correct < n; ++step) {
    model.parameters().zero_grad(backend);
    forward_backward(model, images, labels, LossSettings{});
    sgd.step(0.05f);
    correct = backend.count_correct(model.forward(images, true), labels);
  }
  EXPECT_EQ(correct, n) << "after " << step << " steps";
}

}  // namespace
}  // namespace ringtrain
