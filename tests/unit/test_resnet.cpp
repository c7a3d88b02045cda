// Whole-model facts: parameter counts and MACs against PyTorch's counts for the same
// definitions (torchvision-style ResNets), and a small ResNet that must overfit a fixed batch.
#include <gtest/gtest.h>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/nn/resnet.hpp"
#include "ringtrain/optim/sgd.hpp"
#include "test_util.hpp"

namespace ringtrain {
namespace {

struct Reference {
  int depth;
  const char* stem;
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
                         ::testing::Values(Reference{50, "cifar", 1.0, 23520842, 1297829888},
                                           Reference{34, "cifar", 1.0, 21282122, 1159402496},
                                           Reference{18, "cifar", 1.0, 11173962, 555422720},
                                           Reference{18, "cifar", 0.25, 701466, 35046656},
                                           Reference{50, "imagenet", 1.0, 23528522, 83431424}));

TEST(ResNet, RejectsUnknownDepthAndStem) {
  CpuBackend backend(1);
  ResNetConfig c;
  c.depth = 42;
  EXPECT_THROW(ResNet(c, backend, DType::f32, 1), Error);
  c.depth = 18;
  c.stem = "tiny";
  EXPECT_THROW(ResNet(c, backend, DType::f32, 1), Error);
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
  EXPECT_EQ(infos.back().offset + 10, model.parameter_count());
}

TEST(ResNet, SmallModelOverfitsAFixedBatch) {
  CpuBackend backend(2);
  ResNetConfig c;
  c.depth = 18;
  c.width = 0.25;
  ResNet model(c, backend, DType::f32, 7);
  SgdConfig sc;
  sc.weight_decay = 0;
  Sgd sgd(model.parameters(), backend, sc);
  std::mt19937_64 rng(11);
  const int n = 64;
  Tensor images = test::random_tensor<float>({n, 3, 16, 16}, rng);
  Tensor labels = Tensor::zeros({n}, DType::i32);
  for (int i = 0; i < n; ++i) labels.data<int>()[i] = i % 10;
  Tensor dlogits = Tensor::zeros({n, 10}, DType::f32);
  int64_t correct = 0;
  int step = 0;
  for (; step < 150 && correct < n; ++step) {
    const Tensor& logits = model.forward(images, true);
    backend.softmax_cross_entropy(logits, labels, 0.0f, &dlogits);
    model.backward(dlogits);
    sgd.step(0.05f);
    correct = backend.count_correct(model.forward(images, true), labels);
  }
  EXPECT_EQ(correct, n) << "after " << step << " steps";
}

}  // namespace
}  // namespace ringtrain
