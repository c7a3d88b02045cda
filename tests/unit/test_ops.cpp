// Batch norm, pooling, elementwise ops, the classifier and the loss: forward against direct
// formulas, backward against central finite differences in double precision, f32 against f64.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <utility>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "test_util.hpp"

namespace ringtrain {
namespace {

using test::max_grad_error;
using test::random_tensor;
using test::weighted_sum;

// One rank's batch norm from the backend's phases (SyncBatchNorm all-reduces between them).
void bn_train(Backend& b, const Tensor& x, const Tensor& gamma, const Tensor& beta, float momentum,
              float eps, bool relu, Tensor& y, Tensor& mean, Tensor& invstd, Tensor& running_mean,
              Tensor& running_var) {
  Tensor sums = Tensor::zeros({2 * x.dim(1) + 1}, DType::f64);
  b.batch_norm_sums(x, sums);
  b.batch_norm_forward_from_sums(x, gamma, beta, sums, momentum, eps, relu, y, mean, invstd,
                                 running_mean, running_var);
}

void bn_backward(Backend& b, const Tensor& x, const Tensor& dy, const Tensor& gamma,
                 const Tensor& beta, const Tensor& mean, const Tensor& invstd, bool relu,
                 Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
  Tensor sums = Tensor::zeros({2 * x.dim(1)}, DType::f64);
  b.batch_norm_backward_sums(x, dy, gamma, beta, mean, invstd, relu, sums);
  b.batch_norm_backward_from_sums(x, dy, gamma, beta, mean, invstd, relu, sums, sums,
                                  static_cast<double>(x.numel() / x.dim(1)), dx, dgamma, dbeta);
}

constexpr double kH = 1e-5;    // finite-difference step in f64
constexpr double kTol = 1e-7;  // f64 analytic vs numeric

TEST(BatchNorm, TrainForwardNormalisesAndUpdatesRunningStats) {
  CpuBackend backend(2);
  std::mt19937_64 rng(3);
  const int n = 3, c = 4, hw = 5 * 6;
  Tensor x = random_tensor<double>({n, c, 5, 6}, rng, 2.0);
  Tensor gamma = random_tensor<double>({c}, rng), beta = random_tensor<double>({c}, rng);
  Tensor y = Tensor::zeros(x.shape(), DType::f64);
  Tensor mean = Tensor::zeros({c}, DType::f64), invstd = Tensor::zeros({c}, DType::f64);
  Tensor rmean = Tensor::zeros({c}, DType::f64), rvar = Tensor::zeros({c}, DType::f64);
  backend.fill(rvar, 1.0);
  bn_train(backend, x, gamma, beta, 0.1f, 1e-5f, false, y, mean, invstd, rmean, rvar);
  for (int ch = 0; ch < c; ++ch) {
    double s = 0, sq = 0;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < hw; ++j) s += x.data<double>()[(i * c + ch) * hw + j];
    const double m = s / (n * hw);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < hw; ++j) sq += std::pow(x.data<double>()[(i * c + ch) * hw + j] - m, 2);
    const double var = sq / (n * hw), unbiased = sq / (n * hw - 1);
    EXPECT_NEAR(mean.data<double>()[ch], m, 1e-12);
    EXPECT_NEAR(invstd.data<double>()[ch], 1 / std::sqrt(var + 1e-5), 1e-9);
    const double mom = 0.1f;  // the interface takes momentum as f32
    EXPECT_NEAR(rmean.data<double>()[ch], mom * m, 1e-12);
    EXPECT_NEAR(rvar.data<double>()[ch], (1 - mom) + mom * unbiased, 1e-12);
    const int at = (1 * c + ch) * hw + 7;
    EXPECT_NEAR(y.data<double>()[at],
                (x.data<double>()[at] - m) / std::sqrt(var + 1e-5) * gamma.data<double>()[ch] +
                    beta.data<double>()[ch],
                1e-9);
  }
  // Eval with the running stats is the same affine map with the stored statistics.
  backend.batch_norm_forward_eval(x, gamma, beta, rmean, rvar, 1e-5f, false, y);
  const double expect = (x.data<double>()[2] - rmean.data<double>()[0]) /
                            std::sqrt(rvar.data<double>()[0] + 1e-5) * gamma.data<double>()[0] +
                        beta.data<double>()[0];
  EXPECT_NEAR(y.data<double>()[2], expect, 1e-9);
}

class BatchNormBackward : public ::testing::TestWithParam<bool> {};

TEST_P(BatchNormBackward, MatchesFiniteDifferencesAndF32) {
  const bool relu = GetParam();
  CpuBackend backend(2);
  std::mt19937_64 rng(4);
  const Shape s = {3, 4, 3, 5};
  Tensor x = random_tensor<double>(s, rng, 1.5), dy = random_tensor<double>(s, rng);
  Tensor gamma = random_tensor<double>({4}, rng), beta = random_tensor<double>({4}, rng);
  Tensor y = Tensor::zeros(s, DType::f64), mean = Tensor::zeros({4}, DType::f64);
  Tensor invstd = Tensor::zeros({4}, DType::f64), rm = Tensor::zeros({4}, DType::f64);
  Tensor rv = Tensor::zeros({4}, DType::f64);
  auto loss = [&] {
    bn_train(backend, x, gamma, beta, 0.1f, 1e-5f, relu, y, mean, invstd, rm, rv);
    return weighted_sum<double>(y, dy);
  };
  loss();
  int64_t clipped = 0;
  for (int64_t i = 0; i < y.numel(); ++i) clipped += y.data<double>()[i] == 0.0;
  EXPECT_EQ(clipped > 0, relu);  // the fused ReLU did clip, and only when asked
  Tensor dx = Tensor::zeros(s, DType::f64), dg = Tensor::zeros({4}, DType::f64);
  Tensor db = Tensor::zeros({4}, DType::f64);
  bn_backward(backend, x, dy, gamma, beta, mean, invstd, relu, dx, dg, db);
  EXPECT_LT(max_grad_error<double>(x, dx, loss, kH), kTol);
  EXPECT_LT(max_grad_error<double>(gamma, dg, loss, kH), kTol);
  EXPECT_LT(max_grad_error<double>(beta, db, loss, kH), kTol);

  Tensor x32 = test::cast<float, double>(x), dy32 = test::cast<float, double>(dy);
  Tensor g32 = test::cast<float, double>(gamma), b32 = test::cast<float, double>(beta);
  Tensor y32 = Tensor::zeros(s, DType::f32), m32 = Tensor::zeros({4}, DType::f32);
  Tensor is32 = Tensor::zeros({4}, DType::f32), rm32 = Tensor::zeros({4}, DType::f32);
  Tensor rv32 = Tensor::zeros({4}, DType::f32), dx32 = Tensor::zeros(s, DType::f32);
  Tensor dg32 = Tensor::zeros({4}, DType::f32), db32 = Tensor::zeros({4}, DType::f32);
  bn_train(backend, x32, g32, b32, 0.1f, 1e-5f, relu, y32, m32, is32, rm32, rv32);
  bn_backward(backend, x32, dy32, g32, b32, m32, is32, relu, dx32, dg32, db32);
  EXPECT_LT(test::max_rel_diff(dx32, dx), 1e-4);
  EXPECT_LT(test::max_rel_diff(dg32, dg), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(WithAndWithoutRelu, BatchNormBackward, ::testing::Bool());

// One batch norm's operands and state, of dtype T.
template <class T>
struct NormState {
  Tensor gamma, beta, mean, invstd, running_mean, running_var, sums;
  NormState(int64_t c, std::mt19937_64& rng)
      : gamma(random_tensor<T>({c}, rng)),
        beta(random_tensor<T>({c}, rng)),
        mean(Tensor::zeros({c}, dtype_of<T>())),
        invstd(Tensor::zeros({c}, dtype_of<T>())),
        running_mean(random_tensor<T>({c}, rng)),
        running_var(Tensor::zeros({c}, dtype_of<T>())),
        sums(Tensor::zeros({2 * c + 1}, DType::f64)) {
    for (int64_t i = 0; i < c; ++i) running_var.data<T>()[i] = T(0.5) + T(i);
  }
};

// relu(bn1(x) + bn2(r)) and relu(bn1(x) + r) in one pass (batch_norm_add_relu from the affine
// maps of batch_norm_train_affine or batch_norm_eval_affine) against the batch norms' outputs
// added (batch_norm_forward_train or _eval, then add_relu): the same values, a few roundings
// apart at most (the compiler may fuse a multiply-add in one and not the other), and the same
// statistics, kept and running, bit for bit.
template <class T>
void expect_add_relu_matches_its_parts(bool training, bool shortcut_norm) {
  CpuBackend backend(2);
  std::mt19937_64 rng(5);
  const Shape shape = {3, 4, 5, 6};
  const Tensor x = random_tensor<T>(shape, rng, 2.0), r = random_tensor<T>(shape, rng, 2.0);
  std::mt19937_64 rng_a(9), rng_b(9);  // the same states, once for each way
  NormState<T> a1(4, rng_a), a2(4, rng_a), b1(4, rng_b), b2(4, rng_b);
  Tensor y1 = Tensor::zeros(shape, dtype_of<T>()), y2 = Tensor::zeros(shape, dtype_of<T>());
  Tensor want = Tensor::zeros(shape, dtype_of<T>());
  const auto normalise = [&](const Tensor& in, NormState<T>& s, Tensor& out) {
    if (training) {
      backend.batch_norm_forward_train(in, s.gamma, s.beta, 0.1f, 1e-5f, false, s.sums, out, s.mean,
                                       s.invstd, s.running_mean, s.running_var);
    } else {
      backend.batch_norm_forward_eval(in, s.gamma, s.beta, s.running_mean, s.running_var, 1e-5f,
                                      false, out);
    }
  };
  normalise(x, a1, y1);
  if (shortcut_norm) normalise(r, a2, y2);
  backend.add_relu(y1, shortcut_norm ? y2 : r, want);
  const auto affine_of = [&](const Tensor& in, NormState<T>& s) {
    Tensor affine = Tensor::zeros({8}, dtype_of<T>());
    if (training) {
      backend.batch_norm_train_affine(in, s.gamma, s.beta, 0.1f, 1e-5f, s.sums, s.mean, s.invstd,
                                      s.running_mean, s.running_var, affine);
    } else {
      backend.batch_norm_eval_affine(s.gamma, s.beta, s.running_mean, s.running_var, 1e-5f, affine);
    }
    return affine;
  };
  const Tensor affine1 = affine_of(x, b1);
  const Tensor affine2 = shortcut_norm ? affine_of(r, b2) : Tensor();
  Tensor got = Tensor::zeros(shape, dtype_of<T>());
  backend.batch_norm_add_relu(x, affine1, r, shortcut_norm ? &affine2 : nullptr, got);
  const double ulp = std::numeric_limits<T>::epsilon();
  for (int64_t i = 0; i < got.numel(); ++i)
    ASSERT_NEAR(got.data<T>()[i], want.data<T>()[i], 8 * ulp * (1 + std::abs(want.data<T>()[i])))
        << i;
  if (!training) return;
  const Tensor* pairs[][2] = {{&a1.mean, &b1.mean},
                              {&a1.invstd, &b1.invstd},
                              {&a1.running_mean, &b1.running_mean},
                              {&a1.running_var, &b1.running_var},
                              {&a2.mean, &b2.mean},
                              {&a2.invstd, &b2.invstd},
                              {&a2.running_mean, &b2.running_mean},
                              {&a2.running_var, &b2.running_var}};
  for (const auto& pair : pairs) {
    const Tensor &u = *pair[0], &v = *pair[1];
    for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(u.data<T>()[i], v.data<T>()[i]) << i;
  }
}

TEST(BatchNorm, AddReluInOnePassEqualsItsParts) {
  for (const bool training : {true, false}) {
    for (const bool shortcut_norm : {true, false}) {
      SCOPED_TRACE(::testing::Message()
                   << "training " << training << ", shortcut norm " << shortcut_norm);
      expect_add_relu_matches_its_parts<float>(training, shortcut_norm);
      expect_add_relu_matches_its_parts<double>(training, shortcut_norm);
    }
  }
}

TEST(Elementwise, AddReluAndItsGradient) {
  CpuBackend backend(2);
  std::mt19937_64 rng(5);
  const Shape s = {2, 3, 4, 5};
  Tensor a = random_tensor<double>(s, rng), b = random_tensor<double>(s, rng);
  Tensor dy = random_tensor<double>(s, rng), y = Tensor::zeros(s, DType::f64);
  auto loss = [&] {
    backend.add_relu(a, b, y);
    return weighted_sum<double>(y, dy);
  };
  loss();
  for (int64_t i = 0; i < y.numel(); ++i)
    ASSERT_EQ(y.data<double>()[i], std::max(0.0, a.data<double>()[i] + b.data<double>()[i]));
  Tensor da = Tensor::zeros(s, DType::f64);
  backend.relu_backward(y, dy, da);
  EXPECT_LT(max_grad_error<double>(a, da, loss, kH), kTol);
  backend.add(a, b, y);
  EXPECT_EQ(y.data<double>()[3], a.data<double>()[3] + b.data<double>()[3]);
}

TEST(Pooling, MaxPoolForwardAndBackward) {
  CpuBackend backend(1);
  std::mt19937_64 rng(6);
  PoolGeometry g;
  g.n = 2, g.c = 3, g.h = 7, g.w = 6;
  Tensor x = random_tensor<double>({2, 3, 7, 6}, rng);
  Tensor y = Tensor::zeros({2, 3, g.p(), g.q()}, DType::f64);
  Tensor dy = random_tensor<double>(y.shape(), rng);
  auto loss = [&] {
    backend.max_pool_forward(g, x, y);
    return weighted_sum<double>(y, dy);
  };
  loss();
  // Output (1,1) of plane 0 covers rows 1..3, columns 1..3.
  double best = -1e30;
  for (int i = 1; i <= 3; ++i)
    for (int j = 1; j <= 3; ++j) best = std::max(best, x.data<double>()[i * 6 + j]);
  EXPECT_EQ(y.data<double>()[1 * g.q() + 1], best);
  Tensor dx = Tensor::zeros(x.shape(), DType::f64);
  backend.max_pool_backward(g, x, y, dy, dx);
  EXPECT_LT(max_grad_error<double>(x, dx, loss, kH), kTol);
}

TEST(Pooling, GlobalAveragePool) {
  CpuBackend backend(2);
  std::mt19937_64 rng(7);
  Tensor x = random_tensor<double>({3, 4, 2, 3}, rng), y = Tensor::zeros({3, 4}, DType::f64);
  Tensor dy = random_tensor<double>({3, 4}, rng);
  auto loss = [&] {
    backend.global_avg_pool_forward(x, y);
    return weighted_sum<double>(y, dy);
  };
  loss();
  double s = 0;
  for (int i = 0; i < 6; ++i) s += x.data<double>()[6 * 5 + i];
  EXPECT_NEAR(y.data<double>()[5], s / 6, 1e-12);
  Tensor dx = Tensor::zeros(x.shape(), DType::f64);
  backend.global_avg_pool_backward(dy, dx);
  EXPECT_LT(max_grad_error<double>(x, dx, loss, kH), kTol);
}

TEST(Linear, ForwardAndBackward) {
  CpuBackend backend(1);
  std::mt19937_64 rng(8);
  Tensor x = random_tensor<double>({5, 7}, rng), w = random_tensor<double>({3, 7}, rng);
  Tensor b = random_tensor<double>({3}, rng), dy = random_tensor<double>({5, 3}, rng);
  Tensor y = Tensor::zeros({5, 3}, DType::f64);
  auto loss = [&] {
    backend.linear_forward(x, w, b, y);
    return weighted_sum<double>(y, dy);
  };
  loss();
  double ref = b.data<double>()[2];
  for (int k = 0; k < 7; ++k) ref += x.data<double>()[4 * 7 + k] * w.data<double>()[2 * 7 + k];
  EXPECT_NEAR(y.data<double>()[4 * 3 + 2], ref, 1e-12);
  Tensor dx = Tensor::zeros(x.shape(), DType::f64), dw = Tensor::zeros(w.shape(), DType::f64);
  Tensor db = Tensor::zeros(b.shape(), DType::f64);
  backend.linear_backward(x, w, dy, &dx, dw, db);
  EXPECT_LT(max_grad_error<double>(x, dx, loss, kH), kTol);
  EXPECT_LT(max_grad_error<double>(w, dw, loss, kH), kTol);
  EXPECT_LT(max_grad_error<double>(b, db, loss, kH), kTol);
}

// `grad` runs a backward op into its gradient tensors; it must add to what they hold.
void expect_added(const std::vector<Tensor*>& grads, const std::function<void()>& grad,
                  const char* op) {
  std::mt19937_64 rng(12);
  std::vector<Tensor> once, held;
  for (Tensor* g : grads) std::fill(g->data<double>(), g->data<double>() + g->numel(), 0.0);
  grad();
  for (Tensor* g : grads) {
    once.push_back(Tensor::zeros(g->shape(), DType::f64));
    std::copy(g->data<double>(), g->data<double>() + g->numel(), once.back().data<double>());
  }
  for (Tensor* g : grads) {
    held.push_back(random_tensor<double>(g->shape(), rng));
    std::copy(held.back().data<double>(), held.back().data<double>() + g->numel(),
              g->data<double>());
  }
  grad();
  for (size_t t = 0; t < grads.size(); ++t)
    for (int64_t i = 0; i < grads[t]->numel(); ++i)
      ASSERT_NEAR(grads[t]->data<double>()[i],
                  held[t].data<double>()[i] + once[t].data<double>()[i], 1e-12)
          << op << " gradient " << t << " element " << i;
}

// Backward adds the parameter gradients to what their tensors hold (gradient accumulation and
// DataParallel's reduce rely on it); activation gradients are overwritten.
TEST(ParameterGradients, AreAddedToWhatTheTensorsHold) {
  CpuBackend backend(2);
  std::mt19937_64 rng(10);
  const ConvGeometry g{2, 3, 5, 5, 4, 3, 3, 1, 1};
  Tensor x = random_tensor<double>({2, 3, 5, 5}, rng),
         dy = random_tensor<double>({2, 4, 5, 5}, rng);
  Tensor dw = Tensor::zeros({4, 3, 3, 3}, DType::f64);
  expect_added(
      {&dw}, [&] { backend.conv_backward_filter(g, x, dy, dw); }, "conv filter");

  Tensor gamma = random_tensor<double>({3}, rng), beta = random_tensor<double>({3}, rng);
  Tensor y = Tensor::zeros(x.shape(), DType::f64), dx = Tensor::zeros(x.shape(), DType::f64);
  Tensor mean = Tensor::zeros({3}, DType::f64), invstd = Tensor::zeros({3}, DType::f64);
  Tensor rmean = Tensor::zeros({3}, DType::f64), rvar = Tensor::zeros({3}, DType::f64);
  bn_train(backend, x, gamma, beta, 0.1f, 1e-5f, true, y, mean, invstd, rmean, rvar);
  Tensor dgamma = Tensor::zeros({3}, DType::f64), dbeta = Tensor::zeros({3}, DType::f64);
  const Tensor dbn = random_tensor<double>(x.shape(), rng);
  expect_added(
      {&dgamma, &dbeta},
      [&] { bn_backward(backend, x, dbn, gamma, beta, mean, invstd, true, dx, dgamma, dbeta); },
      "batch norm");

  Tensor fx = random_tensor<double>({5, 7}, rng), fw = random_tensor<double>({3, 7}, rng);
  Tensor fdy = random_tensor<double>({5, 3}, rng), fdx = Tensor::zeros({5, 7}, DType::f64);
  Tensor fdw = Tensor::zeros({3, 7}, DType::f64), fdb = Tensor::zeros({3}, DType::f64);
  expect_added(
      {&fdw, &fdb}, [&] { backend.linear_backward(fx, fw, fdy, &fdx, fdw, fdb); }, "linear");
}

TEST(Loss, SoftmaxCrossEntropyWithLabelSmoothing) {
  CpuBackend backend(1);
  std::mt19937_64 rng(9);
  const int n = 4, k = 5;
  Tensor z = random_tensor<double>({n, k}, rng, 2.0), labels = Tensor::zeros({n}, DType::i32);
  for (int i = 0; i < n; ++i) labels.data<int>()[i] = (3 * i + 1) % k;
  for (double eps : {0.0, 0.1}) {
    double ref = 0;
    for (int i = 0; i < n; ++i) {
      double lse = 0;
      for (int j = 0; j < k; ++j) lse += std::exp(z.data<double>()[i * k + j]);
      lse = std::log(lse);
      double mean = 0;
      for (int j = 0; j < k; ++j) mean += (lse - z.data<double>()[i * k + j]) / k;
      ref += ((1 - eps) * (lse - z.data<double>()[i * k + labels.data<int>()[i]]) + eps * mean) / n;
    }
    Tensor dz = Tensor::zeros(z.shape(), DType::f64);
    EXPECT_NEAR(backend.softmax_cross_entropy(z, labels, static_cast<float>(eps), &dz, 1.0), ref,
                1e-7);
    auto loss = [&] {
      return backend.softmax_cross_entropy(z, labels, static_cast<float>(eps), nullptr, 1.0);
    };
    // float(0.1) is not 0.1: the loss above was computed with the same rounded smoothing.
    EXPECT_LT(max_grad_error<double>(z, dz, loss, kH), kTol);
  }
}

TEST(Loss, RejectsLabelsOutOfRange) {
  CpuBackend backend(1);
  Tensor z = Tensor::zeros({2, 3}, DType::f32), labels = Tensor::zeros({2}, DType::i32);
  labels.data<int>()[1] = 3;
  EXPECT_THROW(backend.softmax_cross_entropy(z, labels, 0, nullptr, 1.0), Error);
}

// record_loss keeps what softmax_cross_entropy and count_correct give, bit for bit, in the
// order recorded; take_losses returns them in one read and empties the log.
TEST(Loss, TheLossLogKeepsTheOneCallValuesInOrder) {
  CpuBackend backend(1);
  std::mt19937_64 rng(4);
  const int n = 6, k = 4;
  Tensor z = random_tensor<float>({n, k}, rng, 2.0), labels = Tensor::zeros({n}, DType::i32);
  for (int i = 0; i < n; ++i) labels.data<int>()[i] = (5 * i + 2) % k;
  Tensor z2 = random_tensor<float>({n, k}, rng, 2.0);
  Tensor want_dz = Tensor::zeros(z.shape(), DType::f32), dz = Tensor::zeros(z.shape(), DType::f32);
  const double want2 = backend.softmax_cross_entropy(z2, labels, 0.1f, nullptr, 8.0);
  const double want = backend.softmax_cross_entropy(z, labels, 0.1f, &want_dz, 8.0);
  const int64_t correct = backend.count_correct(z, labels);
  const int64_t correct2 = backend.count_correct(z2, labels);
  EXPECT_TRUE(backend.take_losses().empty());
  const int64_t reads = backend.values_read();
  backend.record_loss(z2, labels, 0.1f, dz, 8.0);
  backend.record_loss(z, labels, 0.1f, dz, 8.0);
  EXPECT_EQ(backend.values_read(), reads);  // nothing is read while recording
  const std::vector<LossValue> got = backend.take_losses();
  EXPECT_EQ(backend.values_read(), reads + 1);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].loss, want2);
  EXPECT_EQ(got[0].correct, correct2);
  EXPECT_EQ(got[1].loss, want);
  EXPECT_EQ(got[1].correct, correct);
  for (int64_t i = 0; i < z.numel(); ++i) ASSERT_EQ(dz.data<float>()[i], want_dz.data<float>()[i]);
  EXPECT_TRUE(backend.take_losses().empty());
  EXPECT_EQ(backend.values_read(), reads + 1);
}

TEST(Accuracy, CountsFirstArgMax) {
  CpuBackend backend(1);
  Tensor z = Tensor::zeros({3, 3}, DType::f32), labels = Tensor::zeros({3}, DType::i32);
  const float values[] = {0, 5, 1, 2, 2, 0, 0, 0, 9};
  std::copy(values, values + 9, z.data<float>());
  const int l[] = {1, 1, 2};  // row 1 ties 0 and 1: the first maximum (0) is the prediction
  std::copy(l, l + 3, labels.data<int>());
  EXPECT_EQ(backend.count_correct(z, labels), 2);
}

}  // namespace
}  // namespace ringtrain
