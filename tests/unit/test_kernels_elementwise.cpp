// The element-wise kernel bodies of the CUDA backend, run on the host by the grid emulator at
// sizes that leave the last block partly idle and under a small grid that makes every thread
// stride, against the CPU backend's ops: bit-exact in f32, and in bf16 equal to the CPU's f32
// result of the same bf16 inputs rounded once.
#include <gtest/gtest.h>

#include <random>

#include "host_grid.hpp"
#include "kernel_data.hpp"
#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/backend/kernels/elementwise.hpp"
#include "ringtrain/core/half.hpp"

namespace ringtrain {
namespace {

using test::bf16_exact_values;
using test::device_grid;
using test::emulate_grid_stride;
using test::Grid;
using test::HostBf16;
using test::kSmallGrid;
using test::rounded_to_bf16;
using test::values_of;

// A 1-D f32 tensor holding v.
Tensor vector_tensor(const std::vector<float>& v) {
  return test::f32_tensor(v, {static_cast<int64_t>(v.size())});
}

const int64_t kSizes[] = {1, 31, 257, 4099};

// The CPU backend's result of a binary op on (a, b).
template <class Op>
std::vector<float> cpu_binary(const std::vector<float>& a, const std::vector<float>& b, Op op) {
  CpuBackend cpu(1);
  Tensor ta = vector_tensor(a), tb = vector_tensor(b), ty = Tensor::zeros(ta.shape(), DType::f32);
  op(cpu, ta, tb, ty);
  return values_of(ty);
}

// The body Make<T>(a, b, out) emulated over a.size() indices in T, read back as floats.
template <class T, class Make>
std::vector<float> emulated_binary(const std::vector<float>& a, const std::vector<float>& b,
                                   Grid grid, Make make) {
  std::vector<T> ea = test::to_elements<T>(a), eb = test::to_elements<T>(b), out(a.size());
  emulate_grid_stride(make(ea.data(), eb.data(), out.data()), static_cast<int64_t>(a.size()), grid);
  return test::to_floats(out);
}

class ElementwiseKernel : public ::testing::TestWithParam<std::tuple<int64_t, bool>> {
 protected:
  int64_t n() const { return std::get<0>(GetParam()); }
  Grid grid() const { return std::get<1>(GetParam()) ? kSmallGrid : device_grid(n()); }
};

TEST_P(ElementwiseKernel, ReluBackwardMatchesTheCpu) {
  const std::vector<float> y = bf16_exact_values(n(), 1), dy = bf16_exact_values(n(), 2);
  const auto cpu = cpu_binary(
      y, dy, [](CpuBackend& b, Tensor& p, Tensor& q, Tensor& out) { b.relu_backward(p, q, out); });
  const auto body = [](auto* p, auto* q, auto* out) {
    return kernels::ReluBackward<std::remove_pointer_t<decltype(out)>>{p, q, out};
  };
  EXPECT_EQ(emulated_binary<float>(y, dy, grid(), body), cpu);
  EXPECT_EQ(emulated_binary<HostBf16>(y, dy, grid(), body), rounded_to_bf16(cpu));
}

TEST_P(ElementwiseKernel, AddAndAddReluMatchTheCpu) {
  const std::vector<float> a = bf16_exact_values(n(), 3), b = bf16_exact_values(n(), 4);
  for (const bool relu : {false, true}) {
    const auto cpu = cpu_binary(a, b, [relu](CpuBackend& be, Tensor& p, Tensor& q, Tensor& out) {
      relu ? be.add_relu(p, q, out) : be.add(p, q, out);
    });
    const auto body = [relu](auto* p, auto* q, auto* out) {
      return kernels::Add<std::remove_pointer_t<decltype(out)>>{p, q, out, relu};
    };
    EXPECT_EQ(emulated_binary<float>(a, b, grid(), body), cpu) << "relu " << relu;
    EXPECT_EQ(emulated_binary<HostBf16>(a, b, grid(), body), rounded_to_bf16(cpu))
        << "relu " << relu;
  }
}

TEST_P(ElementwiseKernel, ScaleMatchesTheCpu) {
  const std::vector<float> values = bf16_exact_values(n(), 5);
  CpuBackend cpu(1);
  Tensor t = vector_tensor(values);
  cpu.scale(t, 0.375);
  std::vector<float> out = values;
  emulate_grid_stride(kernels::Scale<float>{out.data(), 0.375f}, n(), grid());
  EXPECT_EQ(out, values_of(t));
  std::vector<HostBf16> half = test::to_elements<HostBf16>(values);
  emulate_grid_stride(kernels::Scale<HostBf16>{half.data(), 0.375f}, n(), grid());
  EXPECT_EQ(test::to_floats(half), rounded_to_bf16(values_of(t)));
}

TEST_P(ElementwiseKernel, CastRoundsToNearestEvenAndFillWritesEveryElement) {
  std::vector<float> values = bf16_exact_values(n(), 6);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] += 1e-3f * static_cast<float>(i % 7);
  std::vector<HostBf16> half(values.size());
  emulate_grid_stride(kernels::Cast<float, HostBf16>{values.data(), half.data()}, n(), grid());
  for (std::size_t i = 0; i < values.size(); ++i)
    ASSERT_EQ(half[i].bits, float_to_bf16(values[i])) << "element " << i;
  std::vector<uint16_t> filled(values.size(), 0);
  emulate_grid_stride(kernels::Fill<uint16_t>{filled.data(), 0x3f80}, n(), grid());
  EXPECT_EQ(filled, std::vector<uint16_t>(values.size(), 0x3f80));
}

INSTANTIATE_TEST_SUITE_P(SizesAndGrids, ElementwiseKernel,
                         ::testing::Combine(::testing::ValuesIn(kSizes), ::testing::Bool()));

TEST(GridStride, VisitsEveryIndexOnceWhateverTheGeometry) {
  const auto nothing = [](int64_t) {};
  for (const int64_t n : {int64_t{0}, int64_t{1}, int64_t{255}, int64_t{256}, int64_t{257}})
    for (const Grid g : {device_grid(n), kSmallGrid, Grid{1, 1}, Grid{7, 33}})
      EXPECT_NO_THROW(emulate_grid_stride(nothing, n, g)) << n << " over " << g.blocks;
  // Past the launcher's block cap, each thread takes two strides.
  const int64_t big = kernels::kMaxBlocks * kernels::kThreads + 5;
  EXPECT_EQ(device_grid(big).blocks, kernels::kMaxBlocks);
  EXPECT_NO_THROW(emulate_grid_stride(nothing, big, device_grid(big)));
  // The emulator notices a grid that leaves indices out.
  EXPECT_THROW(emulate_grid_stride(nothing, 5, Grid{0, 32}), std::logic_error);
}

}  // namespace
}  // namespace ringtrain
