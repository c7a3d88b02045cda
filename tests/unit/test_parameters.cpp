// The layout of the flat parameter buffers: every view 256-byte aligned in every buffer dtype,
// the parameter count free of the padding, and the padding zero through SGD steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "host_grid.hpp"
#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/backend/kernels/elementwise.hpp"
#include "ringtrain/optim/sgd.hpp"

namespace ringtrain {
namespace {

// The CPU device computing in bf16: a ParameterSet on it keeps f32 master weights and
// gradients with bf16 weights and backward gradients, as on a GPU; the gradient hand-over runs
// the CUDA kernel's body in the host grid emulator.
class Bf16HostDevice final : public Device {
 public:
  int64_t accumulates = 0;  // hand-overs: calls of accumulate
  DeviceId device_id() const override { return cpu_.device_id(); }
  std::string name() const override { return "cpu-bf16"; }
  DType compute_dtype() const override { return DType::bf16; }
  Layout layout() const override { return cpu_.layout(); }
  Tensor zeros(const Shape& shape, DType dtype) override { return cpu_.zeros(shape, dtype); }
  void fill(Tensor& t, double value) override {
    if (t.dtype() != DType::bf16) return cpu_.fill(t, value);
    auto* bits = static_cast<uint16_t*>(t.raw());
    std::fill(bits, bits + t.numel(), float_to_bf16(static_cast<float>(value)));
  }
  void copy(const Tensor& src, Tensor& dst) override { cpu_.copy(src, dst); }
  void write(const void* host, std::size_t bytes, Tensor& dst) override {
    cpu_.write(host, bytes, dst);
  }
  void cast(const Tensor& src, Tensor& dst) override { cpu_.cast(src, dst); }
  void accumulate(Tensor& src, Tensor& dst) override {
    ++accumulates;
    ASSERT_EQ(src.dtype(), DType::bf16);
    ASSERT_EQ(dst.dtype(), DType::f32);
    const kernels::AccumulateAndClear<test::HostBf16, float> body{
        static_cast<test::HostBf16*>(src.raw()), dst.data<float>()};
    test::emulate_grid_stride(body, src.numel(), test::kSmallGrid);
  }
  void synchronize() override {}
  void bind_thread() override {}
  int64_t mark(const char* label) override { return cpu_.mark(label); }
  double seconds_between(int64_t from, int64_t to) override {
    return cpu_.seconds_between(from, to);
  }
  void release_marks(int64_t before) override { cpu_.release_marks(before); }
  std::shared_ptr<void> host_buffer(std::size_t bytes) override { return cpu_.host_buffer(bytes); }
  void copy_to_device_async(const Tensor& host, Tensor& device) override {
    cpu_.copy_to_device_async(host, device);
  }
  void wait_for_copies() override {}

 private:
  CpuBackend cpu_{1};
};

// Odd sizes, so that packing them without padding would misalign nearly all of them.
const Shape kShapes[] = {{16, 3, 3, 3}, {7}, {1}, {130}, {10, 33}, {3}};

ParameterSet odd_parameters() {
  ParameterSet ps;
  for (size_t i = 0; i < std::size(kShapes); ++i)
    ps.add("p" + std::to_string(i), kShapes[i],
           i % 2 ? ParamKind::norm_bias : ParamKind::conv_weight);
  ps.add_buffer("b0", {5});
  ps.add_buffer("b1", {9});
  return ps;
}

bool aligned256(const Tensor& t) {
  return reinterpret_cast<std::uintptr_t>(t.raw()) % 256 == 0;
}

void expect_aligned_views(Device& device, DType master, DType compute) {
  ParameterSet ps = odd_parameters();
  ps.allocate(device, master);
  int64_t count = 0;
  for (size_t i = 0; i < std::size(kShapes); ++i) {
    const int id = static_cast<int>(i);
    const std::string& name = ps.param_infos()[i].name;
    EXPECT_TRUE(aligned256(ps.param(id))) << name;
    EXPECT_TRUE(aligned256(ps.weight(id))) << name;
    EXPECT_TRUE(aligned256(ps.grad(id))) << name;
    EXPECT_TRUE(aligned256(ps.backward_grad(id))) << name;
    EXPECT_EQ(ps.param(id).shape(), kShapes[i]) << name;
    EXPECT_EQ(ps.param(id).dtype(), master) << name;
    EXPECT_EQ(ps.weight(id).dtype(), compute) << name;
    EXPECT_EQ(ps.grad(id).dtype(), master) << name;
    const bool norm = ps.param_infos()[i].kind == ParamKind::norm_bias;
    EXPECT_EQ(ps.backward_grad(id).dtype(), norm ? master : compute) << name;
    count += shape_numel(kShapes[i]);
  }
  EXPECT_TRUE(aligned256(ps.buffer(0)));
  EXPECT_TRUE(aligned256(ps.buffer(1)));
  EXPECT_EQ(ps.param_count(), count);
  EXPECT_GE(ps.flat_size(), count);
  EXPECT_EQ(ps.flat_params().numel(), ps.flat_size());
}

TEST(ParameterLayout, EveryViewIs256ByteAlignedInEveryBuffer) {
  CpuBackend cpu(1);
  expect_aligned_views(cpu, DType::f32, DType::f32);
  expect_aligned_views(cpu, DType::f64, DType::f64);
  Bf16HostDevice bf16;
  expect_aligned_views(bf16, DType::f32, DType::bf16);
}

// Four micro-batches' bf16 gradients 256, 1, 1, 1: added in bf16 (8 significant bits) the sum
// stays 256, in the f32 gradients it is 259. Each hand-over clears the bf16 gradient; the
// listener (DDP) hears of each gradient as it is written, before the hand-over.
TEST(MixedPrecision, MicroBatchGradientsAccumulateInF32) {
  Bf16HostDevice device;
  ParameterSet ps = odd_parameters();
  ps.allocate(device, DType::f32);
  const int id = 2;  // a convolution's weight
  std::vector<int> heard;
  ps.set_gradient_listener([&](int written) { heard.push_back(written); });
  ps.zero_grad(device);
  std::vector<float> sums;
  for (float g : {256.0f, 1.0f, 1.0f, 1.0f}) {
    Tensor backward = ps.backward_grad(id);
    for (int64_t i = 0; i < backward.numel(); ++i)
      static_cast<uint16_t*>(backward.raw())[i] = float_to_bf16(g);
    ps.gradient_written(id);
    ps.hand_over_gradients();
    sums.push_back(ps.grad(id).data<float>()[0]);
    for (int64_t i = 0; i < backward.numel(); ++i)
      ASSERT_EQ(static_cast<const uint16_t*>(backward.raw())[i], 0) << "element " << i;
  }
  const Tensor grad = ps.grad(id);
  for (int64_t i = 0; i < grad.numel(); ++i) ASSERT_EQ(grad.data<float>()[i], 259.0f) << i;
  EXPECT_EQ(sums, (std::vector<float>{256, 257, 258, 259}));
  EXPECT_EQ(heard, (std::vector<int>{id, id, id, id}));
  ps.zero_grad(device);
  EXPECT_EQ(ps.grad(id).data<float>()[0], 0.0f);
}

// A backward pass writes its gradients from the last parameter to the first; they are handed
// over in one pass over the span they cover, and only what was written: a gradient written
// after the hand-over waits for the next one.
TEST(MixedPrecision, GradientsAreHandedOverInOnePass) {
  Bf16HostDevice device;
  ParameterSet ps = odd_parameters();
  ps.allocate(device, DType::f32);
  ps.zero_grad(device);
  const int n = static_cast<int>(ps.param_infos().size());
  for (int id = n; id-- > 1;) {
    Tensor backward = ps.backward_grad(id);
    if (backward.dtype() == DType::bf16)
      for (int64_t i = 0; i < backward.numel(); ++i)
        static_cast<uint16_t*>(backward.raw())[i] = float_to_bf16(static_cast<float>(id));
    ps.gradient_written(id);
  }
  const int64_t before = device.accumulates;
  ps.hand_over_gradients();
  EXPECT_EQ(device.accumulates, before + 1);
  ps.hand_over_gradients();  // nothing written since
  EXPECT_EQ(device.accumulates, before + 1);
  for (int id = 1; id < n; ++id) {
    if (ps.param_infos()[static_cast<size_t>(id)].kind == ParamKind::norm_bias) continue;
    EXPECT_EQ(ps.grad(id).data<float>()[0], static_cast<float>(id)) << id;
  }
  Tensor first = ps.backward_grad(0);
  static_cast<uint16_t*>(first.raw())[0] = float_to_bf16(5.0f);
  EXPECT_EQ(ps.grad(0).data<float>()[0], 0.0f);  // not written yet: still in bf16
  ps.gradient_written(0);
  ps.hand_over_gradients();
  EXPECT_EQ(ps.grad(0).data<float>()[0], 5.0f);
  EXPECT_EQ(device.accumulates, before + 2);
}

// Batch norm's gradients are written in f32 straight into the gradients the optimizer reads,
// with no bf16 buffer between: backward adds to them, micro-batch after micro-batch, and the
// listener hears of each as it is written.
TEST(MixedPrecision, NormGradientsAreWrittenInF32) {
  Bf16HostDevice device;
  ParameterSet ps = odd_parameters();
  ps.allocate(device, DType::f32);
  const int id = 3;  // a batch norm's bias
  std::vector<float> heard;
  ps.set_gradient_listener(
      [&](int written) { heard.push_back(ps.grad(written).data<float>()[0]); });
  ps.zero_grad(device);
  Tensor backward = ps.backward_grad(id);
  ASSERT_EQ(backward.dtype(), DType::f32);
  ASSERT_EQ(backward.raw(), ps.grad(id).raw());
  for (const float g : {256.0f, 0.5f, 0.25f, 0.125f}) {
    for (int64_t i = 0; i < backward.numel(); ++i) backward.data<float>()[i] += g;
    ps.gradient_written(id);
  }
  EXPECT_EQ(heard, (std::vector<float>{256, 256.5f, 256.75f, 256.875f}));
}

TEST(ParameterLayout, SpansTileTheBufferAndDecayRunsCoverIt) {
  ParameterSet ps = odd_parameters();
  int64_t end = 0;
  for (size_t i = 0; i < std::size(kShapes); ++i) {
    EXPECT_EQ(ps.param_infos()[i].offset, end) << i;
    EXPECT_GE(ps.span(static_cast<int>(i)), shape_numel(kShapes[i])) << i;
    end += ps.span(static_cast<int>(i));
  }
  EXPECT_EQ(end, ps.flat_size());
  for (bool all : {true, false}) {
    int64_t covered = 0;
    for (const DecayRun& r : ps.decay_runs(all)) {
      EXPECT_EQ(r.offset, covered);
      covered += r.size;
    }
    EXPECT_EQ(covered, ps.flat_size());
  }
}

TEST(ParameterLayout, PaddingStaysZeroThroughSgdWithWeightDecay) {
  CpuBackend cpu(1);
  ParameterSet ps = odd_parameters();
  ps.allocate(cpu, DType::f32);
  for (size_t i = 0; i < std::size(kShapes); ++i) {
    Tensor p = ps.param(static_cast<int>(i));
    cpu.fill(p, 0.5);
  }
  OptimizerConfig config;
  config.weight_decay = 0.1f;
  Sgd sgd(ps, cpu, config);
  for (int step = 0; step < 3; ++step) {
    for (size_t i = 0; i < std::size(kShapes); ++i) {
      Tensor g = ps.grad(static_cast<int>(i));
      cpu.fill(g, 1.0 + step);
    }
    sgd.step(0.1f);
  }
  std::vector<bool> inside(static_cast<size_t>(ps.flat_size()), false);
  for (const ParamInfo& p : ps.param_infos())
    for (int64_t j = 0; j < shape_numel(p.shape); ++j)
      inside[static_cast<size_t>(p.offset + j)] = true;
  int64_t moved = 0, padding_nonzero = 0;
  for (int64_t i = 0; i < ps.flat_size(); ++i) {
    const float v = ps.flat_params().data<float>()[i];
    if (inside[static_cast<size_t>(i)])
      moved += v != 0.5f;
    else
      padding_nonzero += v != 0.0f;
  }
  EXPECT_EQ(moved, ps.param_count());
  EXPECT_EQ(padding_nonzero, 0);
}

}  // namespace
}  // namespace ringtrain
