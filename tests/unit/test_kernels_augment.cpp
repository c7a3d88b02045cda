// The augmentation's kernel body of the CUDA backend, run on the host by the grid emulator with
// the global normalisation table (the CUDA kernel passes its copy in shared memory), against
// CpuBackend::augment: every crop offset and flip, NHWC and NCHW outputs, f32, bf16 and f16.
// Both look every value up in the same table and round it once, so they agree to the bit.
#include <gtest/gtest.h>

#include <random>

#include "host_grid.hpp"
#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/backend/kernels/augment.hpp"

namespace ringtrain {
namespace {

using test::Grid;

constexpr int kPad = 4, kChannels = 3, kHeight = 7, kWidth = 6;

// One image per crop a draw can give (offsets 0..2*pad in both directions, mirrored or not):
// random pixels in [1, 255], so that no source pixel reads as the padding's 0, and a random
// normalisation table.
struct Batch {
  Tensor raw, crops, table;
};

Batch every_crop_batch() {
  const int64_t images = (2 * kPad + 1) * (2 * kPad + 1) * 2;
  Batch b{Tensor::zeros({images, kChannels, kHeight, kWidth}, DType::u8, Layout::nhwc),
          Tensor::zeros({images, 3}, DType::i32), Tensor::zeros({kChannels * 256}, DType::f32)};
  std::mt19937_64 rng(11);
  for (int64_t i = 0; i < b.raw.numel(); ++i)
    b.raw.data<uint8_t>()[i] = static_cast<uint8_t>(1 + rng() % 255);
  std::normal_distribution<float> value(0.f, 2.f);
  for (int64_t i = 0; i < b.table.numel(); ++i) b.table.data<float>()[i] = value(rng);
  int32_t* draw = b.crops.data<int32_t>();
  for (int dy = 0; dy <= 2 * kPad; ++dy)
    for (int dx = 0; dx <= 2 * kPad; ++dx)
      for (const int flip : {0, 1}) {
        draw[0] = dy, draw[1] = dx, draw[2] = flip;
        draw += 3;
      }
  return b;
}

std::vector<uint8_t> bytes_of(const void* p, std::size_t n) {
  const auto* bytes = static_cast<const uint8_t*>(p);
  return {bytes, bytes + n};
}

// The batch augmented by the Augment<T> body into `layout`, as bytes.
template <class T>
std::vector<uint8_t> emulated_augment(const Batch& b, Layout layout, Grid grid) {
  std::vector<T> out(static_cast<std::size_t>(b.raw.numel()));
  const kernels::Augment<T> body{
      b.raw.data<uint8_t>(), b.crops.data<int32_t>(), out.data(), kChannels, kHeight, kWidth, kPad,
      layout == Layout::nhwc};
  const float* table = b.table.data<float>();
  test::emulate_grid_stride([&](int64_t i) { body(i, table); }, b.raw.numel(), grid);
  return bytes_of(out.data(), out.size() * sizeof(T));
}

std::vector<uint8_t> emulated_augment(const Batch& b, DType dtype, Layout layout, Grid grid) {
  switch (dtype) {
    case DType::f32:
      return emulated_augment<float>(b, layout, grid);
    case DType::bf16:
      return emulated_augment<test::HostBf16>(b, layout, grid);
    default:
      return emulated_augment<test::HostF16>(b, layout, grid);
  }
}

class AugmentKernel : public ::testing::TestWithParam<bool> {
 protected:
  Grid grid(int64_t n) const { return GetParam() ? test::kSmallGrid : test::device_grid(n); }
};

TEST_P(AugmentKernel, EveryCropAndFlipMatchesTheCpuAugment) {
  const Batch b = every_crop_batch();
  ASSERT_NE(b.raw.numel() % kernels::kThreads, 0);  // the last block is partly idle
  CpuBackend cpu(1);
  for (const Layout layout : {Layout::nhwc, Layout::nchw})
    for (const DType dtype : {DType::f32, DType::bf16, DType::f16}) {
      Tensor want = Tensor::zeros(b.raw.shape(), dtype, layout);
      cpu.augment(b.raw, b.crops, b.table, kPad, want);
      EXPECT_EQ(emulated_augment(b, dtype, layout, grid(b.raw.numel())),
                bytes_of(want.raw(), want.nbytes()))
          << dtype_name(dtype) << (layout == Layout::nhwc ? " NHWC" : " NCHW");
    }
}

INSTANTIATE_TEST_SUITE_P(Grids, AugmentKernel, ::testing::Bool());

}  // namespace
}  // namespace ringtrain
