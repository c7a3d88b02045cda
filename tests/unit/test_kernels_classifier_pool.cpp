// The kernel bodies of the classifier's bias and of global average pooling, run on the host by
// the grid emulator at sizes that leave the last block partly idle and under a small grid that
// makes every thread stride, against the CPU backend's linear and pooling ops: bit-exact in f32,
// and in bf16 equal to the CPU's f32 result of the same bf16 inputs rounded once. The CPU
// backend is NCHW, the bodies NHWC: the tests transpose.
#include <gtest/gtest.h>

#include "host_grid.hpp"
#include "kernel_data.hpp"
#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/backend/kernels/classifier.hpp"
#include "ringtrain/backend/kernels/pool.hpp"
#include "ringtrain/core/layout.hpp"

namespace ringtrain {
namespace {

using test::device_grid;
using test::emulate_grid_stride;
using test::f32_tensor;
using test::Grid;
using test::HostBf16;
using test::kSmallGrid;
using test::rounded_to_bf16;
using test::to_elements;
using test::to_floats;
using test::values_of;

// [rows, cols] of the classifier's output.
struct Matrix {
  int rows, cols;
};
const Matrix kMatrices[] = {{1, 1}, {3, 10}, {33, 31}, {5, 257}, {2, 1025}};

class ClassifierKernel : public ::testing::TestWithParam<std::tuple<Matrix, bool>> {
 protected:
  int rows() const { return std::get<0>(GetParam()).rows; }
  int cols() const { return std::get<0>(GetParam()).cols; }
  Grid grid(int64_t n) const { return std::get<1>(GetParam()) ? kSmallGrid : device_grid(n); }
};

// The CPU's y = x w^T + b with w the identity: the bias added to x alone, one rounding each.
std::vector<float> cpu_add_bias(const std::vector<float>& x, const std::vector<float>& b,
                                Matrix d) {
  std::vector<float> identity(static_cast<std::size_t>(d.cols) * d.cols, 0.f);
  for (int j = 0; j < d.cols; ++j) identity[static_cast<std::size_t>(j) * d.cols + j] = 1.f;
  CpuBackend cpu(1);
  Tensor y = Tensor::zeros({d.rows, d.cols}, DType::f32);
  cpu.linear_forward(f32_tensor(x, {d.rows, d.cols}), f32_tensor(identity, {d.cols, d.cols}),
                     f32_tensor(b, {d.cols}), y);
  return values_of(y);
}

template <class T>
std::vector<float> emulated_add_bias(const std::vector<float>& x, const std::vector<float>& b,
                                     Matrix d, Grid grid) {
  std::vector<T> y = to_elements<T>(x);
  const std::vector<T> bias = to_elements<T>(b);
  emulate_grid_stride(kernels::AddBias<T>{y.data(), bias.data(), d.cols},
                      static_cast<int64_t>(y.size()), grid);
  return to_floats(y);
}

TEST_P(ClassifierKernel, AddBiasMatchesTheCpuLinearForward) {
  const Matrix d{rows(), cols()};
  const std::vector<float> x = test::bf16_exact_values(int64_t{d.rows} * d.cols, 1),
                           b = test::bf16_exact_values(d.cols, 2);
  const std::vector<float> want = cpu_add_bias(x, b, d);
  const Grid g = grid(int64_t{d.rows} * d.cols);
  EXPECT_EQ(emulated_add_bias<float>(x, b, d, g), want);
  EXPECT_EQ(emulated_add_bias<HostBf16>(x, b, d, g), rounded_to_bf16(want));
}

// db after the CPU's linear_backward adds dy's column sums to it (x and w of one column).
std::vector<float> cpu_column_sums(const std::vector<float>& dy, std::vector<float> db, Matrix d) {
  CpuBackend cpu(1);
  Tensor dw = Tensor::zeros({d.cols, 1}, DType::f32), bias_grad = f32_tensor(db, {d.cols});
  cpu.linear_backward(Tensor::zeros({d.rows, 1}, DType::f32),
                      Tensor::zeros({d.cols, 1}, DType::f32), f32_tensor(dy, {d.rows, d.cols}),
                      nullptr, dw, bias_grad);
  return values_of(bias_grad);
}

template <class T>
std::vector<float> emulated_column_sums(const std::vector<float>& dy, const std::vector<float>& db,
                                        Matrix d, Grid grid) {
  const std::vector<T> grads = to_elements<T>(dy);
  std::vector<T> sums = to_elements<T>(db);
  emulate_grid_stride(kernels::BiasGradient<T>{grads.data(), sums.data(), d.rows, d.cols}, d.cols,
                      grid);
  return to_floats(sums);
}

// Into a zero db the CPU and the body add the same rows in the same order. Into a non-zero db the
// CPU adds row by row and the body adds the column's total once: on multiples of 1/8, where every
// partial sum is exact, both orders give the same numbers.
TEST_P(ClassifierKernel, BiasGradientMatchesTheCpuBiasGradient) {
  const Matrix d{rows(), cols()};
  const int64_t n = int64_t{d.rows} * d.cols;
  const std::vector<float> zero(static_cast<std::size_t>(d.cols), 0.f);
  const std::vector<float> dy = test::bf16_exact_values(n, 3);
  const std::vector<float> want = cpu_column_sums(dy, zero, d);
  EXPECT_EQ(emulated_column_sums<float>(dy, zero, d, grid(d.cols)), want);
  EXPECT_EQ(emulated_column_sums<HostBf16>(dy, zero, d, grid(d.cols)), rounded_to_bf16(want));

  const std::vector<float> exact_dy = test::eighths(n, 4), db = test::eighths(d.cols, 5);
  const std::vector<float> accumulated = cpu_column_sums(exact_dy, db, d);
  EXPECT_EQ(emulated_column_sums<float>(exact_dy, db, d, grid(d.cols)), accumulated);
  EXPECT_EQ(emulated_column_sums<HostBf16>(exact_dy, db, d, grid(d.cols)),
            rounded_to_bf16(accumulated));
}

INSTANTIATE_TEST_SUITE_P(ShapesAndGrids, ClassifierKernel,
                         ::testing::Combine(::testing::ValuesIn(kMatrices), ::testing::Bool()));

// [N, C, H, W] of the pooled activation.
const Shape kActivations[] = {{1, 1, 1, 1}, {2, 5, 3, 2}, {3, 129, 4, 4}, {1, 300, 1, 1}};

class PoolKernel : public ::testing::TestWithParam<std::tuple<Shape, bool>> {
 protected:
  const Shape& shape() const { return std::get<0>(GetParam()); }
  int64_t dim(int i) const { return shape()[static_cast<std::size_t>(i)]; }
  int64_t hw() const { return dim(2) * dim(3); }
  Grid grid(int64_t n) const { return std::get<1>(GetParam()) ? kSmallGrid : device_grid(n); }
};

// The values of an [N, C, H, W] activation given in NCHW order, in NHWC order.
std::vector<float> nhwc_values(const std::vector<float>& nchw, const Shape& shape) {
  Tensor nhwc = Tensor::zeros(shape, DType::f32, Layout::nhwc);
  convert_layout(f32_tensor(nchw, shape), nhwc);
  return values_of(nhwc);
}

TEST_P(PoolKernel, AvgPoolForwardMatchesTheCpu) {
  const std::vector<float> x = test::bf16_exact_values(shape_numel(shape()), 6);
  CpuBackend cpu(1);
  Tensor y = Tensor::zeros({dim(0), dim(1)}, DType::f32);
  cpu.global_avg_pool_forward(f32_tensor(x, shape()), y);
  const std::vector<float> nhwc = nhwc_values(x, shape());
  const auto emulated = [&](auto tag) {
    using T = decltype(tag);
    const std::vector<T> in = to_elements<T>(nhwc);
    std::vector<T> out(static_cast<std::size_t>(y.numel()));
    emulate_grid_stride(kernels::AvgPoolForward<T>{in.data(), out.data(), hw(), dim(1)}, y.numel(),
                        grid(y.numel()));
    return to_floats(out);
  };
  EXPECT_EQ(emulated(float{}), values_of(y));
  EXPECT_EQ(emulated(HostBf16{}), rounded_to_bf16(values_of(y)));
}

TEST_P(PoolKernel, AvgPoolBackwardMatchesTheCpu) {
  const std::vector<float> dy = test::bf16_exact_values(dim(0) * dim(1), 7);
  CpuBackend cpu(1);
  Tensor dx = Tensor::zeros(shape(), DType::f32);
  cpu.global_avg_pool_backward(f32_tensor(dy, {dim(0), dim(1)}), dx);
  const std::vector<float> want = nhwc_values(values_of(dx), shape());
  const auto emulated = [&](auto tag) {
    using T = decltype(tag);
    const std::vector<T> in = to_elements<T>(dy);
    std::vector<T> out(static_cast<std::size_t>(dx.numel()));
    emulate_grid_stride(kernels::AvgPoolBackward<T>{in.data(), out.data(), hw(), dim(1)},
                        dx.numel(), grid(dx.numel()));
    return to_floats(out);
  };
  EXPECT_EQ(emulated(float{}), want);
  EXPECT_EQ(emulated(HostBf16{}), rounded_to_bf16(want));
}

INSTANTIATE_TEST_SUITE_P(ShapesAndGrids, PoolKernel,
                         ::testing::Combine(::testing::ValuesIn(kActivations), ::testing::Bool()));

}  // namespace
}  // namespace ringtrain
