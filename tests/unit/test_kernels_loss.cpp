// The loss and accuracy kernel bodies of the CUDA backend, run on the host by the grid emulator
// against the CPU backend's softmax_cross_entropy and count_correct, in f32 and in bf16, under
// the launcher's grid and a small one; the totals bit-identical whatever the launch geometry; a
// label outside [0, classes) reported at its first row.
//
// Tolerances. Body and CPU evaluate the same f64 formulas on the same f32 values and add the
// rows in the same order; only the compiler's fusing of multiply-adds may differ between the
// two builds (a few f64 roundings): the loss within 1e-12 relative. A gradient is that f64
// value rounded to f32, so it may land one f32 ulp apart (2^-23 relative); in bf16 it is
// rounded once more and may land one bf16 ulp (2^-7 relative) apart. The count is exact.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <tuple>

#include "host_grid.hpp"
#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/backend/kernels/loss.hpp"
#include "ringtrain/core/half.hpp"

namespace ringtrain {
namespace {

using test::device_grid;
using test::Grid;
using test::GridOf;
using test::HostBf16;
using test::kSmallGrid;
using test::launcher_grid;
using test::odd_grid;
using test::one_thread;
using test::small_grid;

constexpr float kSmoothing = 0.1f;

// n * classes logits drawn from a few bf16-exact values (so that rows have ties), labels in
// [0, classes).
struct Batch {
  int n, classes;
  std::vector<float> logits;
  std::vector<int> labels;
};

Batch make_batch(int n, int classes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-4.f, 4.f);
  Batch b{n, classes, std::vector<float>(static_cast<std::size_t>(n) * classes),
          std::vector<int>(static_cast<std::size_t>(n))};
  for (float& z : b.logits) z = rng() % 3 == 0 ? 1.5f : bf16_to_float(float_to_bf16(dist(rng)));
  for (int& l : b.labels) l = static_cast<int>(rng() % static_cast<uint64_t>(classes));
  return b;
}

struct LossResult {
  double loss;
  std::vector<float> dlogits;
  int64_t correct;
};

LossResult cpu_reference(const Batch& b) {
  CpuBackend cpu(1);
  Tensor logits = Tensor::zeros({b.n, b.classes}, DType::f32),
         labels = Tensor::zeros({b.n}, DType::i32);
  Tensor dlogits = Tensor::zeros(logits.shape(), DType::f32);
  std::copy(b.logits.begin(), b.logits.end(), logits.data<float>());
  std::copy(b.labels.begin(), b.labels.end(), labels.data<int>());
  const double loss = cpu.softmax_cross_entropy(logits, labels, kSmoothing, &dlogits, 1.0);
  const float* d = dlogits.data<float>();
  return {loss, std::vector<float>(d, d + dlogits.numel()), cpu.count_correct(logits, labels)};
}

// The CUDA backend's one launch in T, as record_loss issues it: each row's loss, gradient and
// correctness, then, by the last block, the ordered sums and the label check. The loss is
// divided by n on the host, as the backend does.
template <class T>
LossResult body_run(const Batch& b, GridOf grid, int* bad_row = nullptr, double grad_scale = 1.0,
                    double smoothing = kSmoothing) {
  const std::vector<T> logits = test::to_elements<T>(b.logits);
  std::vector<T> dlogits(logits.size());
  std::vector<double> row_loss(static_cast<std::size_t>(b.n));
  std::vector<int> row_correct(static_cast<std::size_t>(b.n));
  double total = -1;
  int correct = -1, bad = -1;
  const kernels::SoftmaxCrossEntropyRow<T> rows{logits.data(), b.labels.data(), b.n,
                                                b.classes,     smoothing,       dlogits.data(),
                                                grad_scale,    row_loss.data()};
  const kernels::RowCorrect<T> row_correctness{logits.data(), b.labels.data(), b.classes,
                                               row_correct.data()};
  using Rows = kernels::Both<decltype(rows), decltype(row_correctness)>;
  test::emulate_then_finish(
      Rows{rows, row_correctness}, b.n, grid(b.n),
      kernels::FinishStep<kernels::ColumnSums<double, double>>{{row_loss.data(), b.n, 1, &total},
                                                               1},
      kernels::FinishStep<kernels::FirstBadLabel>{{b.labels.data(), b.n, b.classes, &bad}, 1},
      kernels::FinishStep<kernels::ColumnSums<int, int>>{{row_correct.data(), b.n, 1, &correct},
                                                         1});
  if (bad_row)
    *bad_row = bad;
  else
    EXPECT_EQ(bad, 0) << "a good batch has no bad row";
  return {total / b.n, test::to_floats(dlogits), correct};
}

void expect_matches(const LossResult& body, const LossResult& cpu, double ulp) {
  EXPECT_NEAR(body.loss, cpu.loss, 1e-12 * std::abs(cpu.loss));
  EXPECT_EQ(body.correct, cpu.correct);
  ASSERT_EQ(body.dlogits.size(), cpu.dlogits.size());
  for (std::size_t i = 0; i < cpu.dlogits.size(); ++i) {
    const float ref = ulp == 0 ? cpu.dlogits[i] : bf16_to_float(float_to_bf16(cpu.dlogits[i]));
    ASSERT_NEAR(body.dlogits[i], ref, (ulp + std::ldexp(1.0, -23)) * std::abs(ref))
        << "dlogits [" << i << "]";
  }
}

// n in {1, 7, 100, 1037}, classes in {1, 3, 10, 33}; the launcher's grid or the small one.
class LossKernels : public ::testing::TestWithParam<std::tuple<int, int, bool>> {
 protected:
  Batch batch() const {
    const int n = std::get<0>(GetParam()), classes = std::get<1>(GetParam());
    return make_batch(n, classes, static_cast<uint64_t>(n * 100 + classes));
  }
  GridOf grid() const { return std::get<2>(GetParam()) ? small_grid : launcher_grid; }
};

TEST_P(LossKernels, MatchTheCpuInF32AndBf16) {
  const Batch b = batch();
  const LossResult cpu = cpu_reference(b);
  expect_matches(body_run<float>(b, grid()), cpu, 0);
  expect_matches(body_run<HostBf16>(b, grid()), cpu, 1.0 / 128);
}

INSTANTIATE_TEST_SUITE_P(SizesAndGrids, LossKernels,
                         ::testing::Combine(::testing::Values(1, 7, 100, 1037),
                                            ::testing::Values(1, 3, 10, 33), ::testing::Bool()));

TEST(LossKernels, TotalsAreBitIdenticalWhateverTheGeometry) {
  const Batch b = make_batch(1037, 10, 5);
  const LossResult reference = body_run<float>(b, launcher_grid);
  for (const GridOf g : {small_grid, one_thread, odd_grid}) {
    const LossResult other = body_run<float>(b, g);
    EXPECT_EQ(std::memcmp(&other.loss, &reference.loss, sizeof(double)), 0);
    EXPECT_EQ(other.correct, reference.correct);
    EXPECT_EQ(other.dlogits, reference.dlogits);
  }
}

// The fp16 loss scale applied inside the kernel, before the rounding to f16: a confident batch
// of 256 (no label smoothing) whose gradients (p - t) / 256 lie below f16's smallest subnormal
// (6e-8) keeps every
// one of them, within an f16 ulp of the exact scaled value; scaling the f16 gradient after the
// rounding (the order before) loses them.
TEST(LossKernels, TheFp16LossScaleIsAppliedBeforeTheRoundingToF16) {
  constexpr int kN = 256, kClasses = 10;
  constexpr double kScale = 65536;
  Batch b{kN, kClasses, std::vector<float>(kN * kClasses, 0.f), std::vector<int>(kN)};
  for (int i = 0; i < kN; ++i) {
    b.labels[i] = i % kClasses;
    b.logits[i * kClasses + b.labels[i]] = 12.f + 0.125f * (i % 7);  // f16-exact; p ~6e-6
  }
  const LossResult scaled_inside = body_run<test::HostF16>(b, launcher_grid, nullptr, kScale, 0);
  const LossResult unscaled = body_run<test::HostF16>(b, launcher_grid, nullptr, 1.0, 0);
  const LossResult exact = body_run<float>(b, launcher_grid, nullptr, kScale, 0);
  int lost_after = 0;
  for (std::size_t i = 0; i < exact.dlogits.size(); ++i) {
    const double want = exact.dlogits[i];
    ASSERT_NE(want, 0.0);
    EXPECT_NEAR(scaled_inside.dlogits[i], want, std::abs(want) / 1024) << "element " << i;
    const float scaled_after = f16_to_float(float_to_f16(unscaled.dlogits[i] * float(kScale)));
    if (std::abs(scaled_after - want) > std::abs(want) / 1024) ++lost_after;
  }
  EXPECT_GT(lost_after, kN * (kClasses - 1) / 2) << "the old order would not have underflowed";
}

TEST(LossKernels, ABadLabelIsReportedAtItsFirstRow) {
  Batch b = make_batch(100, 10, 6);
  b.labels[37] = 10;
  b.labels[41] = -1;
  b.labels[90] = 1 << 30;
  for (const GridOf g : {launcher_grid, small_grid}) {
    int bad = 0;
    const LossResult r = body_run<float>(b, g, &bad);
    EXPECT_EQ(bad, 38) << "row 37, as 1 + row";
    EXPECT_TRUE(std::isfinite(r.loss));
  }
}

}  // namespace
}  // namespace ringtrain
