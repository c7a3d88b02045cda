// The channel padding of the CUDA backend's convolutions (a convolution whose input channels
// cuDNN has no algorithm for runs zero-padded): the pad and drop bodies through the host grid
// emulator, and the claim the padding rests on, checked with the CPU backend's convolution in
// f64: zero input channels with zero filters leave the output, the data gradient of the real
// channels and the filter gradient of the real channels unchanged.
#include <gtest/gtest.h>

#include "host_grid.hpp"
#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/backend/kernels/channels.hpp"
#include "ringtrain/core/layout.hpp"
#include "test_util.hpp"

namespace ringtrain {
namespace {

using test::device_grid;
using test::emulate_grid_stride;
using test::kSmallGrid;

// t (f32, NCHW or KCRS) padded to `wide` channels by the body, on NHWC (KRSC) data as the device
// holds it, and returned in NCHW as f64 for the CPU's convolution.
Tensor padded_f64(const Tensor& t, int wide, test::Grid grid) {
  const int narrow = static_cast<int>(t.dim(1));
  Tensor nhwc = Tensor::zeros(t.shape(), DType::f32, Layout::nhwc);
  convert_layout(t, nhwc);
  const Shape wide_shape{t.dim(0), wide, t.dim(2), t.dim(3)};
  Tensor out = Tensor::zeros(wide_shape, DType::f32, Layout::nhwc);
  emulate_grid_stride(
      kernels::PadChannels<float>{nhwc.data<float>(), out.data<float>(), narrow, wide}, out.numel(),
      grid);
  Tensor nchw = Tensor::zeros(wide_shape, DType::f32);
  convert_layout(out, nchw);
  return test::cast<double, float>(nchw);
}

// The first `narrow` channels of t (f64, NCHW), as NHWC f32.
Tensor real_channels_nhwc(const Tensor& t, int narrow, test::Grid grid) {
  Tensor wide = Tensor::zeros(t.shape(), DType::f32, Layout::nhwc);
  convert_layout(test::cast<float, double>(t), wide);
  Tensor out = Tensor::zeros({t.dim(0), narrow, t.dim(2), t.dim(3)}, DType::f32, Layout::nhwc);
  emulate_grid_stride(kernels::DropChannels<float>{wide.data<float>(), out.data<float>(), narrow,
                                                   static_cast<int>(t.dim(1)), false},
                      out.numel(), grid);
  return out;
}

Tensor nhwc_f32(const Tensor& nchw64) {
  Tensor out = Tensor::zeros(nchw64.shape(), DType::f32, Layout::nhwc);
  convert_layout(test::cast<float, double>(nchw64), out);
  return out;
}

void expect_near_all(const Tensor& a, const Tensor& b, double tol, const char* what) {
  ASSERT_EQ(a.numel(), b.numel()) << what;
  for (int64_t i = 0; i < a.numel(); ++i)
    ASSERT_NEAR(a.data<float>()[i], b.data<float>()[i], tol) << what << " at " << i;
}

class PaddedConv : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(PaddedConv, GivesTheResultsOfTheUnpaddedConvolution) {
  const int wide = std::get<0>(GetParam());
  const ConvGeometry g{3, 3, 7, 5, 6, 3, 3, 1, 1};  // the stem's 3 channels, odd sides
  const test::Grid grid = std::get<1>(GetParam()) ? kSmallGrid : device_grid(g.n * wide * 35);
  std::mt19937_64 rng(11);
  const Tensor x = test::random_tensor<float>({g.n, g.c, g.h, g.w}, rng);
  const Tensor w = test::random_tensor<float>({g.k, g.c, g.r, g.s}, rng);
  const Tensor dy = test::random_tensor<double>({g.n, g.k, g.p(), g.q()}, rng);
  CpuBackend cpu(1);
  const auto run = [&](const ConvGeometry& geo, const Tensor& x64, const Tensor& w64) {
    std::array<Tensor, 3> out{Tensor::zeros({geo.n, geo.k, geo.p(), geo.q()}, DType::f64),
                              Tensor::zeros(x64.shape(), DType::f64),
                              Tensor::zeros(w64.shape(), DType::f64)};
    cpu.conv_forward(geo, x64, w64, out[0]);
    cpu.conv_backward_data(geo, dy, w64, out[1]);
    cpu.conv_backward_filter(geo, x64, dy, out[2]);
    return out;
  };
  const auto plain = run(g, test::cast<double, float>(x), test::cast<double, float>(w));
  ConvGeometry gw = g;
  gw.c = wide;
  const auto padded = run(gw, padded_f64(x, wide, grid), padded_f64(w, wide, grid));
  // f64 sums of the same products plus exact zeros: equal but for the order of the additions.
  const double tol = 1e-12;
  expect_near_all(test::cast<float, double>(padded[0]), test::cast<float, double>(plain[0]), tol,
                  "output");
  expect_near_all(real_channels_nhwc(padded[1], g.c, grid), nhwc_f32(plain[1]), tol, "dx");
  expect_near_all(real_channels_nhwc(padded[2], g.c, grid), nhwc_f32(plain[2]), tol, "dw");
}

INSTANTIATE_TEST_SUITE_P(FourAndEight, PaddedConv,
                         ::testing::Combine(::testing::Values(4, 8), ::testing::Bool()));

TEST(DropChannels, AccumulatesIntoTheFilterGradientWhenAsked) {
  const int narrow = 3, wide = 8, rows = 37;
  std::vector<float> src(rows * wide), dst(rows * narrow, 0.5f);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i);
  emulate_grid_stride(kernels::DropChannels<float>{src.data(), dst.data(), narrow, wide, true},
                      rows * narrow, kSmallGrid);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < narrow; ++c)
      ASSERT_EQ(dst[r * narrow + c], 0.5f + static_cast<float>(r * wide + c)) << r << "," << c;
}

}  // namespace
}  // namespace ringtrain
