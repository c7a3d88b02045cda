// The batch-norm kernel bodies of the CUDA backend (NHWC: x is [rows, C]), run on the host by
// the grid emulator against the CPU backend's phases (NCHW, f32), in f32 and in bf16, at sizes
// that leave the last block and the last chunk of rows partly filled, under the launcher's grid
// and a small one; and the per-channel sums bit-identical whatever the launch geometry.
//
// Tolerances. The bodies evaluate the CPU's formulas, except that the f64 sums add the same
// terms in another order (chunks, then the chunks' partials), and the compiler may fuse a
// multiply-add differently in the two builds. So:
// - an f64 sum is within the worst-case error of reassociating a sum of `rows` terms:
//   2 * rows^2 * 2^-53 * (largest |term|);
// - an f32 result (statistics, y, dx, dgamma, dbeta) may see one of its inputs one f32 rounding
//   apart (a statistic from a sum that rounded differently; the running statistics' 1 - momentum,
//   which the body rounds to f32 and the CPU does not), which moves it by a few f32 ulps of its
//   operands (at most about 10 here): |body - cpu| <= 2e-6 * (1 + |cpu|), 4x the largest gap
//   seen (eval-mode y);
// - a bf16 result is the f32 result rounded once, so it may land on the neighbouring bf16
//   value: one more bf16 ulp, 2^-7 * |cpu|, on top of the f32 tolerance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <tuple>
#include <utility>

#include "host_grid.hpp"
#include "kernel_data.hpp"
#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/backend/kernels/batch_norm.hpp"
#include "ringtrain/core/half.hpp"

namespace ringtrain {
namespace {

using test::device_grid;
using test::emulate_grid_stride;
using test::Grid;
using test::GridOf;
using test::HostBf16;
using test::kSmallGrid;
using test::launcher_grid;
using test::odd_grid;
using test::one_thread;
using test::rounded_to_bf16;
using test::small_grid;

constexpr float kMomentum = 0.1f, kEps = 1e-5f;
constexpr double kF32Tol = 2e-6, kBf16Ulp = 1.0 / 128;

// [n, C, hw] in NCHW, the [rows = n * hw, C] matrix of the CUDA backend.
struct NormShape {
  int64_t n, hw;
  int c;
  int64_t rows() const { return n * hw; }
};

// n values uniform in [lo, hi], rounded to bf16 when asked (so that the f32 CPU reads what the
// bf16 body reads).
std::vector<float> uniform(int64_t n, uint64_t seed, float lo, float hi, bool bf16) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = bf16 ? bf16_to_float(float_to_bf16(dist(rng))) : dist(rng);
  return v;
}

// The inputs, NHWC and per channel.
struct NormInputs {
  std::vector<float> x, dy, gamma, beta, running_mean, running_var, dgamma, dbeta;
};

NormInputs make_inputs(const NormShape& s, uint64_t seed, bool bf16) {
  const int64_t n = s.rows() * s.c;
  const auto draw = [&](int64_t count, float lo, float hi) {
    return uniform(count, seed++, lo, hi, bf16);
  };
  NormInputs in;
  in.x = draw(n, -1.f, 3.f);
  in.dy = draw(n, -1.f, 1.f);
  in.gamma = draw(s.c, 0.5f, 2.f);
  in.beta = draw(s.c, -1.f, 1.f);
  in.running_mean = draw(s.c, -1.f, 1.f);
  in.running_var = draw(s.c, 0.5f, 2.f);
  in.dgamma = draw(s.c, -1.f, 1.f);
  in.dbeta = draw(s.c, -1.f, 1.f);
  return in;
}

// What the phases produce (sums without the forward count; activations NHWC).
struct NormOutputs {
  std::vector<double> sums, grad_sums;
  std::vector<float> mean, invstd, running_mean, running_var, y, y_eval, dx, dgamma, dbeta;
};

Tensor nchw_of(const std::vector<float>& nhwc, const NormShape& s) {
  Tensor t = Tensor::zeros({s.n, s.c, s.hw, 1}, DType::f32);
  for (int64_t n = 0; n < s.n; ++n)
    for (int c = 0; c < s.c; ++c)
      for (int64_t p = 0; p < s.hw; ++p)
        t.data<float>()[(n * s.c + c) * s.hw + p] = nhwc[((n * s.hw + p) * s.c + c)];
  return t;
}

std::vector<float> nhwc_of(const Tensor& t, const NormShape& s) {
  std::vector<float> out(static_cast<std::size_t>(t.numel()));
  for (int64_t n = 0; n < s.n; ++n)
    for (int c = 0; c < s.c; ++c)
      for (int64_t p = 0; p < s.hw; ++p)
        out[(n * s.hw + p) * s.c + c] = t.data<float>()[(n * s.c + c) * s.hw + p];
  return out;
}

Tensor vector_of(const std::vector<float>& v) {
  Tensor t = Tensor::zeros({static_cast<int64_t>(v.size())}, DType::f32);
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

template <class V>
std::vector<V> values_of(const Tensor& t, int64_t count) {
  return std::vector<V>(t.data<V>(), t.data<V>() + count);
}

// The CPU backend's phases in f32: train forward, eval forward, backward.
NormOutputs cpu_reference(const NormShape& s, const NormInputs& in, bool relu) {
  CpuBackend cpu(1);
  const Tensor x = nchw_of(in.x, s), dy = nchw_of(in.dy, s);
  const Tensor gamma = vector_of(in.gamma), beta = vector_of(in.beta);
  Tensor rmean = vector_of(in.running_mean), rvar = vector_of(in.running_var);
  Tensor mean = vector_of(in.gamma), invstd = vector_of(in.gamma);
  Tensor dgamma = vector_of(in.dgamma), dbeta = vector_of(in.dbeta);
  Tensor y = Tensor::zeros(x.shape(), DType::f32), y_eval = Tensor::zeros(x.shape(), DType::f32);
  Tensor dx = Tensor::zeros(x.shape(), DType::f32);
  Tensor sums = Tensor::zeros({2 * s.c + 1}, DType::f64),
         grad_sums = Tensor::zeros({2 * s.c}, DType::f64);
  cpu.batch_norm_sums(x, sums);
  cpu.batch_norm_forward_from_sums(x, gamma, beta, sums, kMomentum, kEps, relu, y, mean, invstd,
                                   rmean, rvar);
  cpu.batch_norm_forward_eval(x, gamma, beta, rmean, rvar, kEps, relu, y_eval);
  cpu.batch_norm_backward_sums(x, dy, gamma, beta, mean, invstd, relu, grad_sums);
  cpu.batch_norm_backward_from_sums(x, dy, gamma, beta, mean, invstd, relu, grad_sums, grad_sums,
                                    static_cast<double>(s.rows()), dx, dgamma, dbeta);
  return {values_of<double>(sums, 2 * s.c),
          values_of<double>(grad_sums, 2 * s.c),
          values_of<float>(mean, s.c),
          values_of<float>(invstd, s.c),
          values_of<float>(rmean, s.c),
          values_of<float>(rvar, s.c),
          nhwc_of(y, s),
          nhwc_of(y_eval, s),
          nhwc_of(dx, s),
          values_of<float>(dgamma, s.c),
          values_of<float>(dbeta, s.c)};
}

// The first pass of the CUDA backend's per-channel sums over pair, into partials.
template <class Pair>
kernels::ChunkSums<Pair> chunk_sums(Pair pair, int64_t rows, int channels,
                                    std::vector<double>& partials) {
  const kernels::ChannelChunks chunks = kernels::channel_chunks(rows);
  partials.assign(static_cast<std::size_t>(chunks.chunks * 2 * channels), 0.0);
  return {pair, rows, chunks.rows_per_chunk, channels, partials.data()};
}

// The first pass's indices: one per chunk of rows and channel.
int64_t first_pass_indices(int64_t rows, int channels) {
  return kernels::channel_chunks(rows).chunks * channels;
}

// The second pass, over the first's partials into sums (its first 2C values).
kernels::ColumnSums<double, double> column_sums(std::vector<double>& partials, int64_t rows,
                                                int channels, std::vector<double>& sums) {
  return {partials.data(), kernels::channel_chunks(rows).chunks, 2 * channels, sums.data()};
}

// The CUDA backend's per-channel sums of a SyncBatchNorm phase, in one launch that the first
// pass's last block finishes: [sum first (C), sum second (C)].
template <class Pair>
std::vector<double> channel_sums(Pair pair, int64_t rows, int channels, GridOf grid) {
  std::vector<double> partials, sums(2 * static_cast<std::size_t>(channels));
  const auto first = chunk_sums(pair, rows, channels, partials);
  const int64_t n = first_pass_indices(rows, channels);
  test::emulate_then_finish(first, n, grid(n),
                            kernels::FinishStep<kernels::ColumnSums<double, double>>{
                                column_sums(partials, rows, channels, sums), 2 * channels});
  return sums;
}

template <class Body>
void run(const Body& body, int64_t n, GridOf grid) {
  emulate_grid_stride(body, n, grid(n));
}

// The fused forward of training in T, as the CUDA backend launches it: the sums, whose last
// block adds the count and the statistics, then y; and the eval forward.
template <class T>
void body_forward(const NormShape& s, const NormInputs& in, bool relu, GridOf grid,
                  NormOutputs& out) {
  const int c = s.c;
  const std::vector<T> x = test::to_elements<T>(in.x);
  std::vector<double> partials, sums(2 * static_cast<std::size_t>(c) + 1);
  const auto first = chunk_sums(kernels::SumAndSquare<T>{x.data()}, s.rows(), c, partials);
  out.mean.resize(c);
  out.invstd.resize(c);
  out.running_mean = in.running_mean;
  out.running_var = in.running_var;
  std::vector<float> affine(2 * static_cast<std::size_t>(c)), eval_affine = affine;
  const kernels::SumsWithCount totals{column_sums(partials, s.rows(), c, sums),
                                      static_cast<double>(s.rows())};
  const kernels::TrainStats stats{sums.data(),
                                  c,
                                  kMomentum,
                                  kEps,
                                  in.gamma.data(),
                                  in.beta.data(),
                                  out.mean.data(),
                                  out.invstd.data(),
                                  out.running_mean.data(),
                                  out.running_var.data(),
                                  affine.data(),
                                  affine.data() + c};
  const int64_t n_first = first_pass_indices(s.rows(), c);
  test::emulate_then_finish(first, n_first, grid(n_first),
                            kernels::FinishStep<kernels::SumsWithCount>{totals, 2 * c + 1},
                            kernels::FinishStep<kernels::TrainStats>{stats, c});
  ASSERT_EQ(sums[2 * static_cast<std::size_t>(c)], static_cast<double>(s.rows()));
  out.sums.assign(sums.begin(), sums.end() - 1);
  run(kernels::EvalStats{kEps, in.gamma.data(), in.beta.data(), out.running_mean.data(),
                         out.running_var.data(), eval_affine.data(), eval_affine.data() + c},
      c, grid);
  std::vector<T> y(x.size()), y_eval(x.size());
  const int64_t n = s.rows() * c;
  run(kernels::ChannelAffine<T>{x.data(), y.data(), c, affine.data(), affine.data() + c, relu}, n,
      grid);
  run(kernels::ChannelAffine<T>{x.data(), y_eval.data(), c, eval_affine.data(),
                                eval_affine.data() + c, relu},
      n, grid);
  out.y = test::to_floats(y);
  out.y_eval = test::to_floats(y_eval);
}

// The fused backward in T, as the CUDA backend launches it, from the CPU's saved statistics (so
// that the backward is checked on its own): the gradient sums, whose last block adds dgamma and
// dbeta (f32, added to what they held) and dx's per-channel table, then dx.
template <class T>
void body_backward(const NormShape& s, const NormInputs& in, const NormOutputs& cpu, bool relu,
                   GridOf grid, NormOutputs& out) {
  const int c = s.c;
  const std::vector<T> x = test::to_elements<T>(in.x), dy = test::to_elements<T>(in.dy);
  const kernels::GradientSums<T> grad{
      x.data(),          dy.data(), in.gamma.data(), in.beta.data(), cpu.mean.data(),
      cpu.invstd.data(), relu};
  std::vector<double> partials;
  out.grad_sums.assign(2 * static_cast<std::size_t>(c), 0.0);
  const auto first = chunk_sums(grad, s.rows(), c, partials);
  out.dgamma = in.dgamma;
  out.dbeta = in.dbeta;
  std::vector<float> table(4 * static_cast<std::size_t>(c));
  const kernels::ChannelGradients per_channel{out.grad_sums.data(),
                                              out.grad_sums.data(),
                                              static_cast<double>(s.rows()),
                                              c,
                                              in.gamma.data(),
                                              in.beta.data(),
                                              cpu.mean.data(),
                                              cpu.invstd.data(),
                                              out.dgamma.data(),
                                              out.dbeta.data(),
                                              table.data()};
  const int64_t n_first = first_pass_indices(s.rows(), c);
  test::emulate_then_finish(first, n_first, grid(n_first),
                            kernels::FinishStep<kernels::ColumnSums<double, double>>{
                                column_sums(partials, s.rows(), c, out.grad_sums), 2 * c},
                            kernels::FinishStep<kernels::ChannelGradients>{per_channel, c});
  std::vector<T> dx(x.size());
  run(kernels::InputGrad<T>{x.data(), dy.data(), cpu.mean.data(), cpu.invstd.data(), table.data(),
                            relu, c, dx.data()},
      s.rows() * c, grid);
  out.dx = test::to_floats(dx);
}

template <class T>
NormOutputs body_run(const NormShape& s, const NormInputs& in, const NormOutputs& cpu, bool relu,
                     GridOf grid) {
  NormOutputs out;
  body_forward<T>(s, in, relu, grid, out);
  body_backward<T>(s, in, cpu, relu, grid, out);
  return out;
}

// The largest |term| of the forward sums (x, x^2) and of the backward ones (g, g * xhat, with
// |g| <= |dy|), at least 1: the scale of the sums' tolerance.
std::pair<double, double> largest_terms(const NormInputs& in, const NormOutputs& cpu) {
  const std::size_t channels = cpu.mean.size();
  double forward = 1, backward = 1;
  for (std::size_t i = 0; i < in.x.size(); ++i) {
    const double x = in.x[i], dy = std::abs(in.dy[i]);
    const double xhat = (x - cpu.mean[i % channels]) * cpu.invstd[i % channels];
    forward = std::max({forward, std::abs(x), x * x});
    backward = std::max({backward, dy, dy * std::abs(xhat)});
  }
  return {forward, backward};
}

void expect_sums_near(const std::vector<double>& body, const std::vector<double>& cpu, int64_t rows,
                      double term, const char* what) {
  const double tol = 2.0 * double(rows) * double(rows) * std::ldexp(1.0, -53) * term;
  ASSERT_EQ(body.size(), cpu.size()) << what;
  for (std::size_t i = 0; i < cpu.size(); ++i)
    ASSERT_NEAR(body[i], cpu[i], tol) << what << " [" << i << "]";
}

// |body - cpu| <= f32 tolerance, plus `ulp` * |cpu| for a 16-bit result.
void expect_near(const std::vector<float>& body, const std::vector<float>& cpu, double ulp,
                 const char* what) {
  ASSERT_EQ(body.size(), cpu.size()) << what;
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    const double ref = cpu[i];
    ASSERT_NEAR(body[i], ref, kF32Tol * (1 + std::abs(ref)) + ulp * std::abs(ref))
        << what << " [" << i << "] of " << cpu.size();
  }
}

// A body's outputs against the CPU's; `ulp` is 0 for f32 elements, one bf16 ulp for bf16 (whose
// element results are compared with the CPU's rounded to bf16).
void expect_matches(const NormOutputs& body, const NormOutputs& cpu, const NormShape& s,
                    const NormInputs& in, double ulp) {
  const auto elements = [ulp](const std::vector<float>& v) {
    return ulp == 0 ? v : rounded_to_bf16(v);
  };
  const auto [forward_term, backward_term] = largest_terms(in, cpu);
  expect_sums_near(body.sums, cpu.sums, s.rows(), forward_term, "forward sums");
  expect_sums_near(body.grad_sums, cpu.grad_sums, s.rows(), backward_term, "backward sums");
  expect_near(body.mean, cpu.mean, 0, "mean");
  expect_near(body.invstd, cpu.invstd, 0, "invstd");
  expect_near(body.running_mean, cpu.running_mean, 0, "running mean");
  expect_near(body.running_var, cpu.running_var, 0, "running var");
  expect_near(body.y, elements(cpu.y), ulp, "y");
  expect_near(body.y_eval, elements(cpu.y_eval), ulp, "y (eval)");
  expect_near(body.dx, elements(cpu.dx), ulp, "dx");
  expect_near(body.dgamma, cpu.dgamma, 0, "dgamma (f32 whatever the elements)");
  expect_near(body.dbeta, cpu.dbeta, 0, "dbeta (f32 whatever the elements)");
}

// rows = n * hw in {1, 7, 100, 1037} (1037 = 32 chunks of 32 rows and one of 13), C in
// {1, 3, 33, 64}; with the launcher's grid or the small one.
const NormShape kRowShapes[] = {{1, 1, 0}, {7, 1, 0}, {4, 25, 0}, {17, 61, 0}};
const int kChannels[] = {1, 3, 33, 64};

class BatchNormKernels : public ::testing::TestWithParam<std::tuple<int, int, bool>> {
 protected:
  NormShape shape() const {
    NormShape s = kRowShapes[std::get<0>(GetParam())];
    s.c = std::get<1>(GetParam());
    return s;
  }
  GridOf grid() const { return std::get<2>(GetParam()) ? small_grid : launcher_grid; }
};

// The f32 bodies read full-precision f32 inputs (so that the f64 sums round), the bf16 ones
// bf16 inputs, each against the CPU on the same values.
TEST_P(BatchNormKernels, MatchTheCpuPhasesInF32AndBf16) {
  const NormShape s = shape();
  const uint64_t seed = static_cast<uint64_t>(s.rows() * 100 + s.c);
  const NormInputs in = make_inputs(s, seed, false), in_bf16 = make_inputs(s, seed, true);
  for (const bool relu : {false, true}) {
    SCOPED_TRACE(::testing::Message() << "rows " << s.rows() << ", C " << s.c << ", relu " << relu);
    const NormOutputs cpu = cpu_reference(s, in, relu), cpu_bf16 = cpu_reference(s, in_bf16, relu);
    expect_matches(body_run<float>(s, in, cpu, relu, grid()), cpu, s, in, 0);
    expect_matches(body_run<HostBf16>(s, in_bf16, cpu_bf16, relu, grid()), cpu_bf16, s, in_bf16,
                   kBf16Ulp);
  }
}

INSTANTIATE_TEST_SUITE_P(ShapesAndGrids, BatchNormKernels,
                         ::testing::Combine(::testing::Range(0, 4), ::testing::ValuesIn(kChannels),
                                            ::testing::Bool()));

// n floats of both signs over 40 binades, so that a sum's rounding depends on its order.
std::vector<float> wide_values(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> mantissa(1.f, 2.f), binade(-20.f, 20.f);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = (rng() % 2 ? -1.f : 1.f) * std::ldexp(mantissa(rng), int(binade(rng)));
  return v;
}

std::vector<uint64_t> bits_of(const std::vector<double>& v) {
  std::vector<uint64_t> bits(v.size());
  std::memcpy(bits.data(), v.data(), v.size() * sizeof(double));
  return bits;
}

TEST(BatchNormKernels, SumsAreBitIdenticalWhateverTheGeometry) {
  for (const NormShape s : {NormShape{17, 61, 3}, NormShape{16, 64, 64}}) {
    const std::vector<float> x = wide_values(s.rows() * s.c, 11),
                             dy = wide_values(s.rows() * s.c, 12);
    const std::vector<float> gamma(s.c, 1.5f), beta(s.c, 0.25f), mean(s.c, 0.f), invstd(s.c, 2.f);
    const kernels::GradientSums<float> grad{x.data(),    dy.data(),     gamma.data(), beta.data(),
                                            mean.data(), invstd.data(), true};
    const auto forward = [&](GridOf g) {
      return bits_of(channel_sums(kernels::SumAndSquare<float>{x.data()}, s.rows(), s.c, g));
    };
    const auto backward = [&](GridOf g) { return bits_of(channel_sums(grad, s.rows(), s.c, g)); };
    for (const GridOf g : {small_grid, one_thread, odd_grid}) {
      EXPECT_EQ(forward(g), forward(launcher_grid)) << "rows " << s.rows() << ", C " << s.c;
      EXPECT_EQ(backward(g), backward(launcher_grid)) << "rows " << s.rows() << ", C " << s.c;
    }
  }
}

TEST(BatchNormKernels, ChunksDependOnTheRowsAlone) {
  // The documented shapes: ResNet-50 at 32x32 and 4x4 with 256 images, and the test sizes.
  const auto chunks = [](int64_t rows) {
    const kernels::ChannelChunks c = kernels::channel_chunks(rows);
    return std::make_pair(c.rows_per_chunk, c.chunks);
  };
  EXPECT_EQ(chunks(256 * 32 * 32), std::make_pair(int64_t{256}, int64_t{1024}));
  EXPECT_EQ(chunks(256 * 4 * 4), std::make_pair(int64_t{32}, int64_t{128}));
  EXPECT_EQ(chunks(1037), std::make_pair(int64_t{32}, int64_t{33}));
  EXPECT_EQ(chunks(1), std::make_pair(int64_t{32}, int64_t{1}));
  EXPECT_EQ(chunks(0).second, 0);
  // Every row in exactly one chunk; past 32 rows a chunk, the second pass's chain (chunks) is
  // 1 to 4 times the first's (rows per chunk).
  for (int64_t rows = 1; rows < 30'000'000; rows = rows * 3 + 1) {
    const kernels::ChannelChunks c = kernels::channel_chunks(rows);
    EXPECT_GE(c.rows_per_chunk * c.chunks, rows) << rows;
    EXPECT_LT(c.rows_per_chunk * (c.chunks - 1), rows) << rows;
    EXPECT_LE(c.chunks, 4 * c.rows_per_chunk) << rows;
    if (c.rows_per_chunk > 32) {
      EXPECT_GE(c.chunks, c.rows_per_chunk) << rows;
    }
  }
}

// The end of a residual block (NormAddRelu) against the CPU's batch_norm_add_relu on the same
// values, with a projection's affine map and with an identity shortcut, in f32 and bf16, under
// the launcher's grid and a small one.
template <class T>
void expect_add_relu_matches_the_cpu(const NormShape& s, bool projection, double ulp, GridOf grid) {
  const bool bf16 = ulp > 0;
  const int64_t n = s.rows() * s.c;
  const std::vector<float> x = uniform(n, 21, -2.f, 2.f, bf16), r = uniform(n, 22, -2.f, 2.f, bf16);
  const std::vector<float> affine = uniform(2 * s.c, 23, -1.5f, 1.5f, false);
  const std::vector<float> r_affine = uniform(2 * s.c, 24, -1.5f, 1.5f, false);
  CpuBackend cpu(1);
  const Tensor affine_t = vector_of(affine), r_affine_t = vector_of(r_affine);
  Tensor want = Tensor::zeros({s.n, s.c, s.hw, 1}, DType::f32);
  cpu.batch_norm_add_relu(nchw_of(x, s), affine_t, nchw_of(r, s),
                          projection ? &r_affine_t : nullptr, want);
  const std::vector<T> xe = test::to_elements<T>(x), re = test::to_elements<T>(r);
  std::vector<T> y(xe.size());
  run(kernels::NormAddRelu<T>{xe.data(), re.data(), y.data(), s.c, affine.data(),
                              projection ? r_affine.data() : nullptr},
      n, grid);
  const std::vector<float> cpu_y = nhwc_of(want, s);
  expect_near(test::to_floats(y), bf16 ? rounded_to_bf16(cpu_y) : cpu_y, ulp, "y");
}

TEST(BatchNormKernels, AddReluMatchesTheCpu) {
  for (const NormShape s : {NormShape{1, 1, 1}, NormShape{17, 61, 3}, NormShape{4, 25, 64}}) {
    for (const bool projection : {true, false}) {
      for (const GridOf grid : {launcher_grid, small_grid}) {
        SCOPED_TRACE(::testing::Message()
                     << "rows " << s.rows() << ", C " << s.c << ", projection " << projection);
        expect_add_relu_matches_the_cpu<float>(s, projection, 0, grid);
        expect_add_relu_matches_the_cpu<HostBf16>(s, projection, kBf16Ulp, grid);
      }
    }
  }
}

TEST(BatchNormKernels, NoRowsSumToZero) {
  const std::vector<float> x;
  const auto sums = channel_sums(kernels::SumAndSquare<float>{x.data()}, 0, 5, launcher_grid);
  EXPECT_EQ(sums, std::vector<double>(10, 0.0));
}

}  // namespace
}  // namespace ringtrain
