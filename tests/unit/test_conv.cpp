// Convolution: forward against a direct loop, backward against central finite differences in
// double precision, and the f32 path against the f64 one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "test_util.hpp"

namespace ringtrain {
namespace {

using test::max_grad_error;
using test::random_tensor;

// The three passes by direct loops: y = conv(x, w) and, given dy, dx and dw; in f64, or in f32
// as the plain sequential loops an f32 kernel's accuracy is measured against.
struct DirectConv {
  Tensor y, dx, dw;
};

template <typename T = double>
DirectConv direct_conv(const ConvGeometry& g, const Tensor& x, const Tensor& w,
                       const Tensor* dy = nullptr) {
  const DType dtype = std::is_same_v<T, float> ? DType::f32 : DType::f64;
  DirectConv out{Tensor::zeros({g.n, g.k, g.p(), g.q()}, dtype), Tensor::zeros(x.shape(), dtype),
                 Tensor::zeros(w.shape(), dtype)};
  const T *px = x.data<T>(), *pw = w.data<T>();
  T *py = out.y.data<T>(), *pdx = out.dx.data<T>(), *pdw = out.dw.data<T>();
  for (int n = 0; n < g.n; ++n)
    for (int k = 0; k < g.k; ++k)
      for (int p = 0; p < g.p(); ++p)
        for (int q = 0; q < g.q(); ++q) {
          const int64_t yi = ((n * g.k + k) * g.p() + p) * g.q() + q;
          const T d = dy ? dy->data<T>()[yi] : T(0);
          for (int c = 0; c < g.c; ++c)
            for (int r = 0; r < g.r; ++r)
              for (int t = 0; t < g.s; ++t) {
                const int h = p * g.stride - g.pad + r, wi = q * g.stride - g.pad + t;
                if (h < 0 || h >= g.h || wi < 0 || wi >= g.w) continue;
                const int64_t xi = ((n * g.c + c) * g.h + h) * g.w + wi;
                const int64_t wj = ((k * g.c + c) * g.r + r) * g.s + t;
                py[yi] += px[xi] * pw[wj];
                pdx[xi] += d * pw[wj];
                pdw[wj] += d * px[xi];
              }
        }
  return out;
}

ConvGeometry geometry(int n, int c, int h, int w, int k, int kernel, int stride, int pad) {
  ConvGeometry g;
  g.n = n, g.c = c, g.h = h, g.w = w, g.k = k, g.r = g.s = kernel, g.stride = stride, g.pad = pad;
  return g;
}

class ConvTest : public ::testing::TestWithParam<ConvGeometry> {};

TEST_P(ConvTest, ForwardMatchesDirectLoop) {
  const ConvGeometry g = GetParam();
  std::mt19937_64 rng(1);
  Tensor x = random_tensor<double>({g.n, g.c, g.h, g.w}, rng);
  Tensor w = random_tensor<double>({g.k, g.c, g.r, g.s}, rng);
  Tensor y = Tensor::zeros({g.n, g.k, g.p(), g.q()}, DType::f64);
  CpuBackend backend(2);
  backend.conv_forward(g, x, w, y);
  const Tensor ref = direct_conv(g, x, w).y;
  for (int64_t i = 0; i < y.numel(); ++i)
    ASSERT_NEAR(y.data<double>()[i], ref.data<double>()[i], 1e-12) << g.str() << " at " << i;
}

TEST_P(ConvTest, BackwardMatchesFiniteDifferencesAndF32) {
  const ConvGeometry g = GetParam();
  std::mt19937_64 rng(2);
  Tensor x = random_tensor<double>({g.n, g.c, g.h, g.w}, rng);
  Tensor w = random_tensor<double>({g.k, g.c, g.r, g.s}, rng);
  Tensor dy = random_tensor<double>({g.n, g.k, g.p(), g.q()}, rng);
  CpuBackend backend(2);
  Tensor y = Tensor::zeros(dy.shape(), DType::f64);
  auto loss = [&] {
    backend.conv_forward(g, x, w, y);
    return test::weighted_sum<double>(y, dy);
  };
  Tensor dx = Tensor::zeros(x.shape(), DType::f64), dw = Tensor::zeros(w.shape(), DType::f64);
  backend.conv_backward_data(g, dy, w, dx);
  backend.conv_backward_filter(g, x, dy, dw);
  EXPECT_LT(max_grad_error<double>(x, dx, loss, 1e-5), 1e-8) << g.str();
  EXPECT_LT(max_grad_error<double>(w, dw, loss, 1e-5), 1e-8) << g.str();

  // f32 within 1e-4 of the f64 gradients (relative to the gradient scale).
  Tensor x32 = test::cast<float, double>(x), w32 = test::cast<float, double>(w);
  Tensor dy32 = test::cast<float, double>(dy);
  Tensor dx32 = Tensor::zeros(x.shape(), DType::f32), dw32 = Tensor::zeros(w.shape(), DType::f32);
  backend.conv_backward_data(g, dy32, w32, dx32);
  backend.conv_backward_filter(g, x32, dy32, dw32);
  EXPECT_LT(test::max_rel_diff(dx32, dx), 1e-4) << g.str();
  EXPECT_LT(test::max_rel_diff(dw32, dw), 1e-4) << g.str();
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvTest,
    ::testing::Values(geometry(2, 3, 7, 6, 4, 3, 1, 1),     // 3x3 "same"
                      geometry(2, 4, 8, 8, 3, 3, 2, 1),     // stride 2 with padding
                      geometry(3, 5, 5, 5, 6, 1, 1, 0),     // pointwise
                      geometry(2, 4, 6, 6, 5, 1, 2, 0),     // strided projection shortcut
                      geometry(1, 2, 11, 9, 3, 7, 2, 3),    // imagenet stem
                      geometry(40, 3, 2, 2, 2, 3, 1, 1),    // many small images: grouped GEMMs
                      geometry(33, 4, 2, 2, 3, 1, 1, 0)));  // grouped pointwise, ragged last group

void expect_close(const Tensor& got, const Tensor& want, const ConvGeometry& g, const char* what) {
  for (int64_t i = 0; i < want.numel(); ++i)
    ASSERT_NEAR(got.data<double>()[i], want.data<double>()[i], 1e-12)
        << what << " of " << g.str() << " at " << i;
}

// Every convolution a ResNet has (1x1 stride 1 and 2, 3x3 stride 1 and 2, the 7x7/2 imagenet
// stem) on every map of 1 to 9 pixels a side, square and not: the small maps are where the
// valid-range arithmetic has negative numerators. Run under ASan, an off-by-one there is a
// heap-buffer-overflow; in the release build, a wrong value.
std::vector<ConvGeometry> small_map_geometries() {
  const int kernels[][3] = {{1, 1, 0}, {1, 2, 0}, {3, 1, 1}, {3, 2, 1}, {7, 2, 3}};
  std::vector<ConvGeometry> all;
  for (const auto& k : kernels)
    for (int h = 1; h <= 9; ++h)
      for (int w : h == 5 ? std::vector<int>{5} : std::vector<int>{h, 10 - h}) {
        const ConvGeometry g = geometry(2, 3, h, w, 2, k[0], k[1], k[2]);
        if (g.p() > 0 && g.q() > 0) all.push_back(g);
      }
  return all;
}

// The backend's three passes: y = conv(x, w), dx from dy, and dw (from zero) from dy.
DirectConv backend_passes(CpuBackend& backend, const ConvGeometry& g, const Tensor& x,
                          const Tensor& w, const Tensor& dy) {
  DirectConv out{Tensor::zeros(dy.shape(), x.dtype()), Tensor::zeros(x.shape(), x.dtype()),
                 Tensor::zeros(w.shape(), x.dtype())};
  backend.conv_forward(g, x, w, out.y);
  backend.conv_backward_data(g, dy, w, out.dx);
  backend.conv_backward_filter(g, x, dy, out.dw);
  return out;
}

class SmallMapConvTest : public ::testing::TestWithParam<ConvGeometry> {};

TEST_P(SmallMapConvTest, AllPassesMatchTheDirectLoops) {
  const ConvGeometry g = GetParam();
  std::mt19937_64 rng(3);
  Tensor x = random_tensor<double>({g.n, g.c, g.h, g.w}, rng);
  Tensor w = random_tensor<double>({g.k, g.c, g.r, g.s}, rng);
  Tensor dy = random_tensor<double>({g.n, g.k, g.p(), g.q()}, rng);
  CpuBackend backend(2);
  const DirectConv got = backend_passes(backend, g, x, w, dy);
  const DirectConv ref = direct_conv(g, x, w, &dy);
  expect_close(got.y, ref.y, g, "forward");
  expect_close(got.dx, ref.dx, g, "input gradient");
  expect_close(got.dw, ref.dw, g, "weight gradient");
}

// The backend's f32 passes on 2 threads (oneDNN's direct primitives, or our Winograd) and the
// f64 loops, on the same random operands.
struct F32AndExact {
  DirectConv got, ref;
};

F32AndExact f32_passes_and_f64_loops(const ConvGeometry& g, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const Tensor x = random_tensor<double>({g.n, g.c, g.h, g.w}, rng);
  const Tensor w = random_tensor<double>({g.k, g.c, g.r, g.s}, rng);
  const Tensor dy = random_tensor<double>({g.n, g.k, g.p(), g.q()}, rng);
  CpuBackend backend(2);
  return {backend_passes(backend, g, test::cast<float, double>(x), test::cast<float, double>(w),
                         test::cast<float, double>(dy)),
          direct_conv(g, x, w, &dy)};
}

TEST_P(SmallMapConvTest, F32PassesMatchTheDirectLoops) {
  const ConvGeometry g = GetParam();
  const auto [got, ref] = f32_passes_and_f64_loops(g, 4);
  EXPECT_LT(test::max_rel_diff(got.y, ref.y), 1e-5) << g.str();
  EXPECT_LT(test::max_rel_diff(got.dx, ref.dx), 1e-5) << g.str();
  EXPECT_LT(test::max_rel_diff(got.dw, ref.dw), 1e-5) << g.str();
}

std::string geometry_name(const ::testing::TestParamInfo<ConvGeometry>& info) {
  const ConvGeometry& g = info.param;
  return str_cat("k", g.r, "_stride", g.stride, "_pad", g.pad, "_", g.h, "x", g.w);
}

INSTANTIATE_TEST_SUITE_P(Sizes1To9, SmallMapConvTest, ::testing::ValuesIn(small_map_geometries()),
                         geometry_name);

class WinogradConv : public ::testing::TestWithParam<ConvGeometry> {};

// The three f32 passes on shapes at the edges of our Winograd (src/backend/cpu/winograd.cpp)
// against the f64 loops: relative L2 error within 4e-6 (a plain f32 loop's is about 3e-7,
// Winograd's twice that) and no element off by more than 1e-5 of the largest, which a missed or
// misplaced tile would exceed.
TEST_P(WinogradConv, PassesMatchTheF64Loops) {
  const ConvGeometry g = GetParam();
  const auto [got, ref] = f32_passes_and_f64_loops(g, 7);
  const auto expect_close_f32 = [&](const char* pass, const Tensor& got_pass, const Tensor& want) {
    double largest = 0;
    for (int64_t i = 0; i < want.numel(); ++i)
      largest = std::max(largest, std::abs(want.data<double>()[i]));
    EXPECT_LT(test::relative_l2(got_pass, want), 4e-6) << pass << " of " << g.str();
    EXPECT_LT(test::max_rel_diff(got_pass, want, largest), 1e-5) << pass << " of " << g.str();
  };
  expect_close_f32("forward", got.y, ref.y);
  expect_close_f32("input gradient", got.dx, ref.dx);
  expect_close_f32("filter gradient", got.dw, ref.dw);
}

// Maps that end in part of a 4x4 tile, channels in and out that differ, a thread's part of one
// image; a 4x5 map (the input gradient runs Winograd, the filter gradient direct); and 48x48
// maps, where a thread's seven images go through the transforms in two groups (six, then one)
// and the second group's filter gradient is added to the first's.
INSTANTIATE_TEST_SUITE_P(Edges, WinogradConv,
                         ::testing::Values(geometry(3, 16, 9, 13, 24, 3, 1, 1),
                                           geometry(3, 24, 4, 5, 16, 3, 1, 1),
                                           geometry(14, 16, 48, 48, 16, 3, 1, 1)),
                         geometry_name);

// The f32 passes twice on one backend and once on another with the same thread count: bit for
// bit the same; and the filter gradient is added to what dw holds. A 3x3 layer on 16x16 maps:
// both backward passes run Winograd.
TEST(Conv, F32PassesAreBitIdenticalRunToRun) {
  const ConvGeometry g = geometry(16, 32, 16, 16, 48, 3, 1, 1);
  std::mt19937_64 rng(5);
  const Tensor x = random_tensor<float>({g.n, g.c, g.h, g.w}, rng);
  const Tensor w = random_tensor<float>({g.k, g.c, g.r, g.s}, rng);
  const Tensor dy = random_tensor<float>({g.n, g.k, g.p(), g.q()}, rng);
  auto passes = [&](CpuBackend& backend) {
    DirectConv out = backend_passes(backend, g, x, w, dy);
    return std::vector<Tensor>{out.y, out.dx, out.dw};
  };
  CpuBackend first(2), second(2);
  const std::vector<Tensor> a = passes(first), b = passes(first), c = passes(second);
  for (size_t i = 0; i < a.size(); ++i)
    for (int64_t j = 0; j < a[i].numel(); ++j) {
      ASSERT_EQ(a[i].data<float>()[j], b[i].data<float>()[j]) << "pass " << i << " at " << j;
      ASSERT_EQ(a[i].data<float>()[j], c[i].data<float>()[j]) << "pass " << i << " at " << j;
    }
  Tensor sum = Tensor::zeros(w.shape(), DType::f32);
  first.fill(sum, 1.0);
  first.conv_backward_filter(g, x, dy, sum);
  for (int64_t j = 0; j < sum.numel(); ++j)
    ASSERT_NEAR(sum.data<float>()[j], a[2].data<float>()[j] + 1.0f, 1e-4) << j;
}

class F32ConvAccuracy : public ::testing::TestWithParam<ConvGeometry> {};

// A deep 3x3 layer's three passes in f32 against f64 (relative L2), with the kernels that run
// here (the AVX2 pass of the test command runs AVX2's): the forward and the filter gradient within
// twice a plain sequential f32 loop's error, the input gradient within three times. The filter
// gradient sums n * p * q products a weight, the others c * 9. Both gradients run Winograd on the
// 8x8 and 16x16 maps, the input gradient also on the 4x4 ones (2.0-2.3 times a plain loop's
// error; the direct kernels' is below a plain loop's). It fails if the forward runs Winograd
// (2.1-2.25 times) or the filter gradient does on 4x4 maps (ResNet's last stage on CIFAR-10:
// 2.4 times).
TEST_P(F32ConvAccuracy, PassesAreAsAccurateAsPlainLoops) {
  const ConvGeometry g = GetParam();
  std::mt19937_64 rng(6);
  const Tensor x = random_tensor<float>({g.n, g.c, g.h, g.w}, rng);
  const Tensor w = random_tensor<float>({g.k, g.c, g.r, g.s}, rng);
  const Tensor dy = random_tensor<float>({g.n, g.k, g.p(), g.q()}, rng);
  const Tensor dy64 = test::cast<double, float>(dy);
  const DirectConv exact =
      direct_conv(g, test::cast<double, float>(x), test::cast<double, float>(w), &dy64);
  const DirectConv plain = direct_conv<float>(g, x, w, &dy);
  CpuBackend backend(2);
  const DirectConv got = backend_passes(backend, g, x, w, dy);
  const auto expect_within = [&](const char* pass, const Tensor& got_pass, const Tensor& plain_pass,
                                 const Tensor& exact_pass, double times_plain) {
    const double plain_error = test::relative_l2(plain_pass, exact_pass);
    EXPECT_LT(test::relative_l2(got_pass, exact_pass), times_plain * plain_error)
        << pass << " of " << g.str() << ": the backend's kernels (oneDNN's up to "
        << CpuBackend::kernel_isa() << ") against a plain f32 loop's " << plain_error;
  };
  expect_within("forward", got.y, plain.y, exact.y, 2);
  expect_within("input gradient", got.dx, plain.dx, exact.dx, 3);
  expect_within("filter gradient", got.dw, plain.dw, exact.dw, 2);
}

INSTANTIATE_TEST_SUITE_P(DeepLayers, F32ConvAccuracy,
                         ::testing::Values(geometry(8, 128, 4, 4, 128, 3, 1, 1),
                                           geometry(4, 64, 8, 8, 64, 3, 1, 1),
                                           geometry(2, 32, 16, 16, 32, 3, 1, 1)),
                         [](const ::testing::TestParamInfo<ConvGeometry>& info) {
                           return str_cat(info.param.h, "x", info.param.w, "_maps");
                         });

// The test command's AVX2 pass sets ONEDNN_MAX_CPU_ISA=AVX2: the kernels must then be AVX2's,
// or the pass would check the AVX-512 kernels twice.
TEST(Conv, KernelsFollowOnednnMaxCpuIsa) {
  const char* max = std::getenv("ONEDNN_MAX_CPU_ISA");
  if (max == nullptr)
    GTEST_SKIP() << "ONEDNN_MAX_CPU_ISA unset: oneDNN runs the CPU's best, "
                 << CpuBackend::kernel_isa();
  std::string want = max;
  std::transform(want.begin(), want.end(), want.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  EXPECT_EQ(CpuBackend::kernel_isa(), want);
}

TEST(Conv, OutputExtentRoundsDownForNegativeNumerators) {
  // A 1-pixel map under a 3x3 kernel with stride 2 and no padding has no output; truncation
  // toward zero would say 1.
  EXPECT_EQ(geometry(1, 1, 1, 1, 1, 3, 2, 0).p(), 0);
  EXPECT_EQ(geometry(1, 1, 2, 2, 1, 7, 2, 2).q(), 0);
  EXPECT_EQ(floor_div(-1, 2), -1);
  EXPECT_EQ(floor_div(-4, 2), -2);
  EXPECT_EQ(floor_div(5, 2), 2);
  EXPECT_EQ(ceil_div(-1, 2), 0);
  EXPECT_EQ(ceil_div(3, 2), 2);
}

TEST(Conv, InputSmallerThanTheWindowIsRefused) {
  CpuBackend backend(1);
  const ConvGeometry g = geometry(1, 1, 1, 1, 1, 3, 2, 0);
  Tensor x = Tensor::zeros({1, 1, 1, 1}, DType::f32), w = Tensor::zeros({1, 1, 3, 3}, DType::f32);
  Tensor y = Tensor::zeros({1, 1, 1, 1}, DType::f32);
  try {
    backend.conv_forward(g, x, w, y);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("smaller than the window"), std::string::npos) << e.what();
  }
}

TEST(Conv, ShapeMismatchNamesTheOperandAndShapes) {
  CpuBackend backend(1);
  const ConvGeometry g = geometry(1, 3, 8, 8, 4, 3, 1, 1);
  Tensor x = Tensor::zeros({1, 3, 8, 8}, DType::f32), w = Tensor::zeros({4, 2, 3, 3}, DType::f32);
  Tensor y = Tensor::zeros({1, 4, 8, 8}, DType::f32);
  try {
    backend.conv_forward(g, x, w, y);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("conv_forward: expected weight [4,3,3,3], got f32[4,2,3,3]"),
        std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ringtrain
