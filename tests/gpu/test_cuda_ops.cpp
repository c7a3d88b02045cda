// Each CUDA op against the CPU backend on fresh random inputs, in f32 (within 1e-4 of the
// largest value) and in bf16 and f16 (within 1e-2), the CPU seeing the inputs rounded to the
// GPU's dtype. The parameter gradients (conv dw, batch-norm dgamma and dbeta, classifier dW and
// db) run twice without zeroing and must hold twice the gradient: they accumulate, the other
// outputs are overwritten. Skipped, with the reason, where there is no GPU.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "gpu_test_util.hpp"
#include "ringtrain/backend/cpu/cpu_backend.hpp"

namespace ringtrain {
namespace {

using test::download;
using test::max_rel_diff;
using test::random_f32;
using test::rounded;
using test::times;
using test::tolerance;
using test::upload;

class CudaOps : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    RT_SKIP_WITHOUT_GPU();
    gpu_ = test::gpu_backend(GetParam());
  }
  DType dtype() const { return GetParam(); }
  // Rounded host input and its device copy.
  std::pair<Tensor, Tensor> input(const Shape& shape, double scale = 1.0, double mean = 0.0) {
    Tensor host = rounded(random_f32(shape, rng_, scale, mean), dtype());
    return {host, upload(*gpu_, host, dtype())};
  }
  // Max pooling needs inputs without ties in a window (CPU and GPU may pick different ones of
  // equal values): each [H,W] plane is a random permutation of H*W distinct multiples of 1/32,
  // exact in bf16 and f16 (at most 8 significant bits while H*W <= 256).
  std::pair<Tensor, Tensor> tie_free_input(const Shape& shape) {
    const int64_t plane = shape[2] * shape[3];
    EXPECT_LE(plane, 256);
    Tensor host = Tensor::zeros(shape, DType::f32);
    std::vector<float> values(static_cast<size_t>(plane));
    for (int64_t k = 0; k < plane; ++k) values[static_cast<size_t>(k)] = (k - plane / 2) / 32.0f;
    for (int64_t at = 0; at < host.numel(); at += plane) {
      std::shuffle(values.begin(), values.end(), rng_);
      std::copy(values.begin(), values.end(), host.data<float>() + at);
    }
    return {host, upload(*gpu_, host, dtype())};
  }
  void expect_close(const Tensor& dev, const Tensor& want, const char* what) {
    EXPECT_LE(max_rel_diff(download(*gpu_, dev), want), tolerance(dtype())) << what;
  }
  void check_convolutions(const std::vector<ConvGeometry>& geometries);

  CpuBackend cpu_{2};
  std::unique_ptr<Backend> gpu_;
  std::mt19937_64 rng_{42};
};

// The three passes of each convolution on gpu_ against the CPU; the filter gradient twice.
void CudaOps::check_convolutions(const std::vector<ConvGeometry>& geometries) {
  for (const ConvGeometry& g : geometries) {
    SCOPED_TRACE(g.str());
    auto [x, dx_dev] = input({g.n, g.c, g.h, g.w});
    auto [w, w_dev] = input({g.k, g.c, g.r, g.s}, 1.0 / std::sqrt(g.c * g.r * g.s));
    auto [dy, dy_dev] = input({g.n, g.k, g.p(), g.q()});
    Tensor y = Tensor::zeros(dy.shape(), DType::f32), dx = Tensor::zeros(x.shape(), DType::f32),
           dw = Tensor::zeros(w.shape(), DType::f32);
    cpu_.conv_forward(g, x, w, y);
    cpu_.conv_backward_data(g, dy, w, dx);
    cpu_.conv_backward_filter(g, x, dy, dw);
    Tensor y_dev = gpu_->zeros(y.shape(), dtype()), grad_x = gpu_->zeros(x.shape(), dtype()),
           grad_w = gpu_->zeros(w.shape(), dtype());
    gpu_->conv_forward(g, dx_dev, w_dev, y_dev);
    gpu_->conv_backward_data(g, dy_dev, w_dev, grad_x);
    gpu_->conv_backward_filter(g, dx_dev, dy_dev, grad_w);
    expect_close(y_dev, y, "forward");
    expect_close(grad_x, dx, "backward data");
    expect_close(grad_w, dw, "backward filter");
    gpu_->conv_backward_filter(g, dx_dev, dy_dev, grad_w);
    expect_close(grad_w, times(dw, 2), "backward filter, accumulated twice");
  }
}

TEST_P(CudaOps, ConvolutionForwardAndBothBackwardPasses) {
  check_convolutions({{4, 16, 8, 8, 32, 3, 3, 1, 1},
                      {4, 32, 8, 8, 64, 1, 1, 2, 0},
                      {2, 16, 9, 9, 16, 3, 3, 2, 1},
                      {2, 3, 16, 16, 16, 7, 7, 2, 3}});
}

// The zero-padded input channels, which the backend takes only where cuDNN has no algorithm
// for the real count, forced, so that they run on every GPU.
TEST_P(CudaOps, ConvolutionWithItsInputChannelsZeroPaddedMatchesTheCpu) {
  CudaOptions o;
  o.compute = dtype();
  o.force_padded_channels = true;
  gpu_ = make_cuda_backend(o);
  check_convolutions({{2, 3, 16, 16, 16, 7, 7, 2, 3}, {2, 5, 8, 8, 8, 3, 3, 1, 1}});
}

TEST_P(CudaOps, BatchNormTrainEvalAndBackwardWithAndWithoutRelu) {
  const Shape shape = {4, 24, 5, 5};
  const int64_t c = shape[1];
  for (bool relu : {false, true}) {
    SCOPED_TRACE(relu ? "relu" : "no relu");
    auto [x, x_dev] = input(shape, 2.0, 0.5);
    auto [dy, dy_dev] = input(shape);
    const Tensor gamma = random_f32({c}, rng_, 0.5, 1.0), beta = random_f32({c}, rng_);
    Tensor rm = random_f32({c}, rng_), rv = random_f32({c}, rng_, 0.1, 1.0);
    Tensor g_dev = upload(*gpu_, gamma, DType::f32), b_dev = upload(*gpu_, beta, DType::f32);
    Tensor rm_dev = upload(*gpu_, rm, DType::f32), rv_dev = upload(*gpu_, rv, DType::f32);

    Tensor sums = Tensor::zeros({2 * c + 1}, DType::f64), y = Tensor::zeros(shape, DType::f32);
    Tensor mean = Tensor::zeros({c}, DType::f32), invstd = Tensor::zeros({c}, DType::f32);
    cpu_.batch_norm_sums(x, sums);
    cpu_.batch_norm_forward_from_sums(x, gamma, beta, sums, 0.1f, 1e-5f, relu, y, mean, invstd, rm,
                                      rv);
    Tensor sums_dev = gpu_->zeros({2 * c + 1}, DType::f64), y_dev = gpu_->zeros(shape, dtype());
    Tensor mean_dev = gpu_->zeros({c}, DType::f32), invstd_dev = gpu_->zeros({c}, DType::f32);
    gpu_->batch_norm_sums(x_dev, sums_dev);
    gpu_->batch_norm_forward_from_sums(x_dev, g_dev, b_dev, sums_dev, 0.1f, 1e-5f, relu, y_dev,
                                       mean_dev, invstd_dev, rm_dev, rv_dev);
    expect_close(y_dev, y, "train forward");
    EXPECT_LE(max_rel_diff(download(*gpu_, mean_dev), mean), 1e-5);
    EXPECT_LE(max_rel_diff(download(*gpu_, invstd_dev), invstd), 1e-5);
    EXPECT_LE(max_rel_diff(download(*gpu_, rm_dev), rm), 1e-5);
    EXPECT_LE(max_rel_diff(download(*gpu_, rv_dev), rv), 1e-5);

    Tensor grad_sums = Tensor::zeros({2 * c}, DType::f64), dx = Tensor::zeros(shape, DType::f32);
    Tensor dgamma = Tensor::zeros({c}, DType::f32), dbeta = Tensor::zeros({c}, DType::f32);
    cpu_.batch_norm_backward_sums(x, dy, gamma, beta, mean, invstd, relu, grad_sums);
    cpu_.batch_norm_backward_from_sums(x, dy, gamma, beta, mean, invstd, relu, grad_sums, grad_sums,
                                       double(x.numel() / c), dx, dgamma, dbeta);
    Tensor gs_dev = gpu_->zeros({2 * c}, DType::f64), dx_dev = gpu_->zeros(shape, dtype());
    Tensor dg_dev = gpu_->zeros({c}, DType::f32), db_dev = gpu_->zeros({c}, DType::f32);
    gpu_->batch_norm_backward_sums(x_dev, dy_dev, g_dev, b_dev, mean_dev, invstd_dev, relu, gs_dev);
    gpu_->batch_norm_backward_from_sums(x_dev, dy_dev, g_dev, b_dev, mean_dev, invstd_dev, relu,
                                        gs_dev, gs_dev, double(x.numel() / c), dx_dev, dg_dev,
                                        db_dev);
    expect_close(dx_dev, dx, "backward dx");
    expect_close(dg_dev, dgamma, "backward dgamma");
    expect_close(db_dev, dbeta, "backward dbeta");
    gpu_->batch_norm_backward_from_sums(x_dev, dy_dev, g_dev, b_dev, mean_dev, invstd_dev, relu,
                                        gs_dev, gs_dev, double(x.numel() / c), dx_dev, dg_dev,
                                        db_dev);
    expect_close(dx_dev, dx, "backward dx, overwritten");
    expect_close(dg_dev, times(dgamma, 2), "backward dgamma, accumulated twice");
    expect_close(db_dev, times(dbeta, 2), "backward dbeta, accumulated twice");

    cpu_.batch_norm_forward_eval(x, gamma, beta, rm, rv, 1e-5f, relu, y);
    gpu_->batch_norm_forward_eval(x_dev, g_dev, b_dev, rm_dev, rv_dev, 1e-5f, relu, y_dev);
    expect_close(y_dev, y, "eval forward");
  }
}

// The fused training passes (two launches each way) run the phases' bodies in the phases'
// order, so they give the same bits: y, the statistics, the running statistics, dx, and dgamma
// and dbeta added to what they held. Odd sizes leave the last block and chunk partly filled.
TEST_P(CudaOps, BatchNormFusedPassesEqualThePhasesBitForBit) {
  for (const Shape& shape : {Shape{4, 24, 5, 5}, Shape{3, 67, 11, 13}, Shape{1, 2048, 1, 1}}) {
    const int64_t c = shape[1];
    const bool relu = c % 2 == 0;
    SCOPED_TRACE(shape_str(shape));
    const auto [x, x_dev] = input(shape, 2.0, 0.5);
    const auto [dy, dy_dev] = input(shape);
    const Tensor gamma = upload(*gpu_, random_f32({c}, rng_, 0.5, 1.0), DType::f32);
    const Tensor beta = upload(*gpu_, random_f32({c}, rng_), DType::f32);
    const Tensor running = random_f32({c}, rng_, 0.1, 1.0), start = random_f32({c}, rng_);
    struct Outputs {
      Tensor sums, grad_sums, y, mean, invstd, rm, rv, dx, dgamma, dbeta;
    };
    const auto outputs = [&] {
      return Outputs{gpu_->zeros({2 * c + 1}, DType::f64), gpu_->zeros({2 * c}, DType::f64),
                     gpu_->zeros(shape, dtype()),          gpu_->zeros({c}, DType::f32),
                     gpu_->zeros({c}, DType::f32),         upload(*gpu_, running, DType::f32),
                     upload(*gpu_, running, DType::f32),   gpu_->zeros(shape, dtype()),
                     upload(*gpu_, start, DType::f32),     upload(*gpu_, start, DType::f32)};
    };
    Outputs phases = outputs(), fused = outputs();
    const double rows = static_cast<double>(x.numel() / c);
    gpu_->batch_norm_sums(x_dev, phases.sums);
    gpu_->batch_norm_forward_from_sums(x_dev, gamma, beta, phases.sums, 0.1f, 1e-5f, relu, phases.y,
                                       phases.mean, phases.invstd, phases.rm, phases.rv);
    gpu_->batch_norm_backward_sums(x_dev, dy_dev, gamma, beta, phases.mean, phases.invstd, relu,
                                   phases.grad_sums);
    gpu_->batch_norm_backward_from_sums(x_dev, dy_dev, gamma, beta, phases.mean, phases.invstd,
                                        relu, phases.grad_sums, phases.grad_sums, rows, phases.dx,
                                        phases.dgamma, phases.dbeta);
    gpu_->batch_norm_forward_train(x_dev, gamma, beta, 0.1f, 1e-5f, relu, fused.sums, fused.y,
                                   fused.mean, fused.invstd, fused.rm, fused.rv);
    gpu_->batch_norm_backward(x_dev, dy_dev, gamma, beta, fused.mean, fused.invstd, relu,
                              fused.grad_sums, fused.dx, fused.dgamma, fused.dbeta);
    const std::pair<const char*, Tensor Outputs::*> fields[] = {{"y", &Outputs::y},
                                                                {"mean", &Outputs::mean},
                                                                {"invstd", &Outputs::invstd},
                                                                {"running mean", &Outputs::rm},
                                                                {"running var", &Outputs::rv},
                                                                {"dx", &Outputs::dx},
                                                                {"dgamma", &Outputs::dgamma},
                                                                {"dbeta", &Outputs::dbeta}};
    for (const auto& [what, field] : fields)
      EXPECT_EQ(max_rel_diff(download(*gpu_, fused.*field), download(*gpu_, phases.*field)), 0.0)
          << what;
  }
}

// The end of a residual block in one pass, with a projection's affine map and with an
// identity shortcut, against the CPU on the same (rounded) inputs and maps.
TEST_P(CudaOps, BatchNormAddReluMatchesTheCpu) {
  const Shape shape = {3, 40, 6, 7};
  const int64_t c = shape[1];
  const auto [x, x_dev] = input(shape);
  const auto [r, r_dev] = input(shape);
  const Tensor affine = random_f32({2 * c}, rng_), r_affine = random_f32({2 * c}, rng_);
  const Tensor affine_dev = upload(*gpu_, affine, DType::f32);
  const Tensor r_affine_dev = upload(*gpu_, r_affine, DType::f32);
  for (const bool projection : {true, false}) {
    SCOPED_TRACE(projection ? "projection" : "identity");
    Tensor want = Tensor::zeros(shape, DType::f32), got = gpu_->zeros(shape, dtype());
    cpu_.batch_norm_add_relu(x, affine, r, projection ? &r_affine : nullptr, want);
    gpu_->batch_norm_add_relu(x_dev, affine_dev, r_dev, projection ? &r_affine_dev : nullptr, got);
    expect_close(got, want, "y");
  }
}

// An empty batch (no rows) sums to zero with a count of 0, as on the CPU, instead of launching
// a grid with no blocks (an invalid configuration).
TEST_P(CudaOps, BatchNormSumsOfAnEmptyBatchAreZero) {
  const Shape shape = {0, 8, 4, 4};
  const int64_t c = shape[1];
  Tensor x_dev = gpu_->zeros(shape, dtype()), dy_dev = gpu_->zeros(shape, dtype());
  Tensor v_dev = upload(*gpu_, random_f32({c}, rng_, 0.1, 1.0), DType::f32);
  Tensor sums = gpu_->zeros({2 * c + 1}, DType::f64), grad_sums = gpu_->zeros({2 * c}, DType::f64);
  gpu_->fill(sums, 7.0);
  gpu_->fill(grad_sums, 7.0);
  gpu_->batch_norm_sums(x_dev, sums);
  gpu_->batch_norm_backward_sums(x_dev, dy_dev, v_dev, v_dev, v_dev, v_dev, true, grad_sums);
  for (const Tensor* t : {&sums, &grad_sums}) {
    Tensor host = Tensor::zeros(t->shape(), DType::f64);
    gpu_->copy(*t, host);
    for (int64_t i = 0; i < host.numel(); ++i) EXPECT_EQ(host.data<double>()[i], 0.0) << i;
  }
}

TEST_P(CudaOps, MaxPoolAndGlobalAveragePool) {
  PoolGeometry g;
  g.n = 2;
  g.c = 8;
  g.h = g.w = 9;
  auto [x, x_dev] = tie_free_input({g.n, g.c, g.h, g.w});
  auto [dy, dy_dev] = input({g.n, g.c, g.p(), g.q()});
  Tensor y = Tensor::zeros(dy.shape(), DType::f32), dx = Tensor::zeros(x.shape(), DType::f32);
  cpu_.max_pool_forward(g, x, y);
  cpu_.max_pool_backward(g, x, y, dy, dx);
  Tensor y_dev = gpu_->zeros(y.shape(), dtype()), dx_dev = gpu_->zeros(x.shape(), dtype());
  gpu_->max_pool_forward(g, x_dev, y_dev);
  gpu_->max_pool_backward(g, x_dev, y_dev, dy_dev, dx_dev);
  expect_close(y_dev, y, "max pool forward");
  expect_close(dx_dev, dx, "max pool backward");

  auto [a, a_dev] = input({3, 16, 4, 4});
  auto [da, da_dev] = input({3, 16});
  Tensor pooled = Tensor::zeros({3, 16}, DType::f32), back = Tensor::zeros(a.shape(), DType::f32);
  cpu_.global_avg_pool_forward(a, pooled);
  cpu_.global_avg_pool_backward(da, back);
  Tensor pooled_dev = gpu_->zeros({3, 16}, dtype()), back_dev = gpu_->zeros(a.shape(), dtype());
  gpu_->global_avg_pool_forward(a_dev, pooled_dev);
  gpu_->global_avg_pool_backward(da_dev, back_dev);
  expect_close(pooled_dev, pooled, "average pool forward");
  expect_close(back_dev, back, "average pool backward");
}

TEST_P(CudaOps, LinearForwardAndBackward) {
  auto [x, x_dev] = input({6, 32});
  auto [w, w_dev] = input({10, 32}, 0.2);
  auto [b, b_dev] = input({10});
  auto [dy, dy_dev] = input({6, 10});
  Tensor y = Tensor::zeros({6, 10}, DType::f32), dx = Tensor::zeros(x.shape(), DType::f32);
  Tensor dw = Tensor::zeros(w.shape(), DType::f32), db = Tensor::zeros({10}, DType::f32);
  cpu_.linear_forward(x, w, b, y);
  cpu_.linear_backward(x, w, dy, &dx, dw, db);
  Tensor y_dev = gpu_->zeros(y.shape(), dtype()), dx_dev = gpu_->zeros(x.shape(), dtype());
  Tensor dw_dev = gpu_->zeros(w.shape(), dtype()), db_dev = gpu_->zeros({10}, dtype());
  gpu_->linear_forward(x_dev, w_dev, b_dev, y_dev);
  gpu_->linear_backward(x_dev, w_dev, dy_dev, &dx_dev, dw_dev, db_dev);
  expect_close(y_dev, y, "forward");
  expect_close(dx_dev, dx, "dx");
  expect_close(dw_dev, dw, "dw");
  expect_close(db_dev, db, "db");
  gpu_->linear_backward(x_dev, w_dev, dy_dev, &dx_dev, dw_dev, db_dev);
  expect_close(dx_dev, dx, "dx, overwritten");
  expect_close(dw_dev, times(dw, 2), "dw, accumulated twice");
  expect_close(db_dev, times(db, 2), "db, accumulated twice");
}

TEST_P(CudaOps, SoftmaxCrossEntropyAccuracyAndBadLabels) {
  auto [logits, logits_dev] = input({16, 10}, 3.0);
  Tensor labels = Tensor::zeros({16}, DType::i32);
  for (int i = 0; i < 16; ++i) labels.data<int>()[i] = (i * 7) % 10;
  Tensor labels_dev = gpu_->zeros({16}, DType::i32);
  gpu_->copy(labels, labels_dev);
  Tensor d = Tensor::zeros(logits.shape(), DType::f32), d_dev = gpu_->zeros(d.shape(), dtype());
  const double want = cpu_.softmax_cross_entropy(logits, labels, 0.1f, &d, 1.0);
  const double got = gpu_->softmax_cross_entropy(logits_dev, labels_dev, 0.1f, &d_dev, 1.0);
  EXPECT_NEAR(got, want, 1e-5 * std::abs(want));
  expect_close(d_dev, d, "dlogits");
  EXPECT_EQ(gpu_->count_correct(logits_dev, labels_dev), cpu_.count_correct(logits, labels));

  // The loss log keeps the one call's values, bit for bit (the same kernels), for more batches
  // than it holds at once: one read when it is full, one when the values are taken.
  Tensor logged_dev = gpu_->zeros(d.shape(), dtype());
  const int batches = 1030;
  const int64_t reads = gpu_->values_read();
  for (int b = 0; b < batches; ++b)
    gpu_->record_loss(logits_dev, labels_dev, 0.1f, logged_dev, 1.0);
  const std::vector<LossValue> logged = gpu_->take_losses();
  EXPECT_EQ(gpu_->values_read(), reads + 2);
  ASSERT_EQ(logged.size(), static_cast<size_t>(batches));
  for (const LossValue& v : logged) {
    ASSERT_EQ(v.loss, got);
    ASSERT_EQ(v.correct, cpu_.count_correct(logits, labels));
  }
  EXPECT_EQ(max_rel_diff(download(*gpu_, logged_dev), download(*gpu_, d_dev)), 0.0);
  EXPECT_TRUE(gpu_->take_losses().empty());

  labels.data<int>()[5] = 10;
  gpu_->copy(labels, labels_dev);
  EXPECT_THROW(gpu_->softmax_cross_entropy(logits_dev, labels_dev, 0.0f, nullptr, 1.0), Error);
  gpu_->record_loss(logits_dev, labels_dev, 0.0f, logged_dev, 1.0);
  EXPECT_THROW(gpu_->take_losses(), Error);  // the bad label, found when the values arrive
}

TEST_P(CudaOps, ElementwiseOps) {
  const Shape shape = {2, 8, 3, 3};
  auto [a, a_dev] = input(shape);
  auto [b, b_dev] = input(shape);
  Tensor y = Tensor::zeros(shape, DType::f32), y_dev = gpu_->zeros(shape, dtype());
  cpu_.add(a, b, y);
  gpu_->add(a_dev, b_dev, y_dev);
  expect_close(y_dev, y, "add");
  cpu_.add_relu(a, b, y);
  gpu_->add_relu(a_dev, b_dev, y_dev);
  expect_close(y_dev, y, "add_relu");
  Tensor dx = Tensor::zeros(shape, DType::f32), dx_dev = gpu_->zeros(shape, dtype());
  cpu_.relu_backward(y, b, dx);
  gpu_->relu_backward(y_dev, b_dev, dx_dev);
  expect_close(dx_dev, dx, "relu_backward");
  cpu_.scale(a, 0.25);
  gpu_->scale(a_dev, 0.25);
  expect_close(a_dev, a, "scale");
}

// Every update rule over runs, gradients in the compute dtype, against the CPU: LARS with each
// backend's own per-run sums of squares, AdamW with its two state tensors.
TEST_P(CudaOps, EveryUpdateRuleOverRunsWithComputeDtypeGradients) {
  const int64_t n = 5000;  // the last run is cut into several pieces for the sums
  const std::vector<DecayRun> runs = {{0, 300, true}, {300, 200, false}, {500, 4500, true}};
  const UpdateRule rules[] = {SgdHyper{0.1f, 0.9f, 5e-4f, true, 0.5f},
                              LarsHyper{0.1f, 0.9f, 5e-4f, 0.02f, 0.f, 0.5f},
                              AdamWHyper::at(3, 1e-3f, 0.9f, 0.999f, 1e-8f, 1e-2f, 0.5f)};
  for (const UpdateRule& rule : rules) {
    const int states =
        std::visit([](const auto& h) { return std::decay_t<decltype(h)>::kState; }, rule);
    Tensor w = random_f32({n}, rng_), g = rounded(random_f32({n}, rng_), dtype());
    Tensor w_dev = upload(*gpu_, w, DType::f32), g_dev = upload(*gpu_, g, dtype());
    std::vector<Tensor> s, s_dev;
    for (int k = 0; k < states; ++k) {
      Tensor host = random_f32({n}, rng_, 0.1);
      for (int64_t i = 0; i < n; ++i) host.data<float>()[i] *= host.data<float>()[i];  // v >= 0
      s.push_back(host);
      s_dev.push_back(upload(*gpu_, host, DType::f32));
    }
    std::vector<Tensor*> sp, sp_dev;
    for (int k = 0; k < states; ++k) {
      sp.push_back(&s[static_cast<size_t>(k)]);
      sp_dev.push_back(&s_dev[static_cast<size_t>(k)]);
    }
    Tensor values, values_dev;
    if (std::holds_alternative<LarsHyper>(rule)) {
      const auto r = static_cast<int64_t>(runs.size());
      values = Tensor::zeros({2 * r}, DType::f32);
      values_dev = gpu_->zeros({2 * r}, DType::f32);
      Tensor vw = values.slice(0, {r}), vg = values.slice(r, {r});
      Tensor dw = values_dev.slice(0, {r}), dg = values_dev.slice(r, {r});
      cpu_.sum_squares_per_run(w, runs, vw);
      cpu_.sum_squares_per_run(g, runs, vg);
      gpu_->sum_squares_per_run(w_dev, runs, dw);
      gpu_->sum_squares_per_run(g_dev, runs, dg);
      EXPECT_LE(max_rel_diff(download(*gpu_, values_dev), values), 1e-5) << "sums of squares";
    }
    Tensor hyper = Tensor::zeros({hyper_bytes()}, DType::u8);
    Tensor hyper_dev = gpu_->zeros({hyper_bytes()}, DType::u8);
    cpu_.optimizer_step(write_rule(cpu_, rule, hyper), runs, w, g, sp, values);
    gpu_->optimizer_step(write_rule(*gpu_, rule, hyper_dev), runs, w_dev, g_dev, sp_dev,
                         values_dev);
    const char* name =
        std::visit([](const auto& h) { return std::decay_t<decltype(h)>::kName; }, rule);
    EXPECT_LE(max_rel_diff(download(*gpu_, w_dev), w), 1e-5) << name;
    for (int k = 0; k < states; ++k)
      EXPECT_LE(
          max_rel_diff(download(*gpu_, s_dev[static_cast<size_t>(k)]), s[static_cast<size_t>(k)]),
          1e-5)
          << name << " state " << k;
  }
}

TEST_P(CudaOps, CastRoundsAndFiniteCheckFindsInfAndNan) {
  Tensor x = random_f32({513}, rng_);
  Tensor x_dev = upload(*gpu_, x, DType::f32), c_dev = gpu_->zeros({513}, dtype());
  gpu_->cast(x_dev, c_dev);
  EXPECT_EQ(max_rel_diff(download(*gpu_, c_dev), rounded(x, dtype())), 0.0);
  EXPECT_TRUE(gpu_->all_finite(c_dev));
  x.data<float>()[300] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(gpu_->all_finite(upload(*gpu_, x, dtype())));
  x.data<float>()[300] = std::nanf("");
  EXPECT_FALSE(gpu_->all_finite(upload(*gpu_, x, dtype())));
}

// Value for value what the loader's threads write (the CPU backend runs their kernel), for every
// crop with padding 4: the lookup is exact and both sides round to the dtype the same way.
TEST_P(CudaOps, AugmentWritesWhatTheLoaderThreadsWrite) {
  const int pad = 4, span = 2 * pad + 1;
  const int64_t n = 2 * span * span;
  Tensor raw = Tensor::zeros({n, 3, 7, 6}, DType::u8, Layout::nhwc);
  Tensor crops = Tensor::zeros({n, 3}, DType::i32);
  for (int64_t i = 0; i < raw.numel(); ++i) raw.data<uint8_t>()[i] = static_cast<uint8_t>(rng_());
  for (int64_t i = 0; i < n; ++i) {
    int32_t* draw = crops.data<int32_t>() + 3 * i;
    draw[0] = static_cast<int32_t>(i / 2 % span);
    draw[1] = static_cast<int32_t>(i / 2 / span);
    draw[2] = static_cast<int32_t>(i % 2);
  }
  const Tensor table = random_f32({3 * 256}, rng_);
  Tensor want = Tensor::zeros(raw.shape(), DType::f32);
  cpu_.augment(raw, crops, table, pad, want);

  Tensor raw_dev = gpu_->zeros(raw.shape(), DType::u8),
         crops_dev = gpu_->zeros(crops.shape(), DType::i32);
  gpu_->copy(raw, raw_dev);
  gpu_->copy(crops, crops_dev);
  Tensor out = gpu_->zeros(raw.shape(), dtype());
  gpu_->augment(raw_dev, crops_dev, upload(*gpu_, table, DType::f32), pad, out);
  EXPECT_EQ(max_rel_diff(download(*gpu_, out), rounded(want, dtype())), 0.0);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaOps, ::testing::Values(DType::f32, DType::bf16, DType::f16),
                         [](const auto& info) { return dtype_name(info.param); });

}  // namespace
}  // namespace ringtrain
