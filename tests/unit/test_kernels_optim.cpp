// The optimiser's kernel bodies of the CUDA backend (the finite check and the SGD step), run on
// the host by the grid emulator at sizes that leave the last block partly idle and under a small
// grid that makes every thread stride, against the CPU backend's all_finite and sgd_step.
#include <gtest/gtest.h>

#include <cfloat>
#include <limits>

#include "host_grid.hpp"
#include "kernel_data.hpp"
#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/backend/kernels/sgd.hpp"

namespace ringtrain {
namespace {

using test::device_grid;
using test::emulate_grid_stride;
using test::f32_tensor;
using test::Grid;
using test::HostBf16;
using test::HostF16;
using test::kSmallGrid;
using test::values_of;

const int64_t kSizes[] = {1, 31, 257, 4099};

class OptimKernel : public ::testing::TestWithParam<std::tuple<int64_t, bool>> {
 protected:
  int64_t n() const { return std::get<0>(GetParam()); }
  Grid grid() const { return std::get<1>(GetParam()) ? kSmallGrid : device_grid(n()); }
};

bool cpu_all_finite(const std::vector<float>& values) {
  CpuBackend cpu(1);
  return cpu.all_finite(f32_tensor(values, {static_cast<int64_t>(values.size())}));
}

// The flag AllFinite<T> leaves over `values` in T, starting from 1 as CudaBackend::all_finite's.
template <class T>
bool emulated_all_finite(const std::vector<float>& values, Grid grid) {
  const std::vector<T> elements = test::to_elements<T>(values);
  int flag = 1;
  emulate_grid_stride(kernels::AllFinite<T>{elements.data(), &flag},
                      static_cast<int64_t>(values.size()), grid);
  return flag == 1;
}

TEST_P(OptimKernel, AllFiniteFindsANanOrAnInfinityAnywhere) {
  const std::vector<float> values = test::bf16_exact_values(n(), 1);
  // Finite, up to the largest finite value of each type at both ends.
  const auto with_ends = [&](float largest) {
    std::vector<float> v = values;
    v.front() = largest;
    v.back() = -largest;
    return v;
  };
  ASSERT_TRUE(cpu_all_finite(with_ends(FLT_MAX)));
  EXPECT_TRUE(emulated_all_finite<float>(with_ends(FLT_MAX), grid()));
  EXPECT_TRUE(emulated_all_finite<HostBf16>(with_ends(bf16_to_float(0x7f7f)), grid()));
  EXPECT_TRUE(emulated_all_finite<HostF16>(with_ends(65504.f), grid()));

  // A NaN or an infinity at the first, a middle or the last index.
  const float inf = std::numeric_limits<float>::infinity();
  for (const float bad : {std::numeric_limits<float>::quiet_NaN(), inf, -inf})
    for (const int64_t at : {int64_t{0}, n() / 2, n() - 1}) {
      std::vector<float> v = values;
      v[static_cast<std::size_t>(at)] = bad;
      ASSERT_FALSE(cpu_all_finite(v));
      EXPECT_FALSE(emulated_all_finite<float>(v, grid())) << bad << " at " << at;
      EXPECT_FALSE(emulated_all_finite<HostBf16>(v, grid())) << bad << " at " << at;
      EXPECT_FALSE(emulated_all_finite<HostF16>(v, grid())) << bad << " at " << at;
    }
}

// Runs covering [0, n) with lengths cycling through 1, 37, 300 and 5, decay on every other one,
// so that runs start and end inside the blocks of both grids.
std::vector<DecayRun> alternating_runs(int64_t n) {
  const int64_t lengths[] = {1, 37, 300, 5};
  std::vector<DecayRun> runs;
  for (int64_t offset = 0, k = 0; offset < n; ++k) {
    const int64_t size = std::min(lengths[k % 4], n - offset);
    runs.push_back({offset, size, k % 2 == 0});
    offset += size;
  }
  return runs;
}

struct SgdState {
  std::vector<float> w, m;
};

// The state after one step per gradient vector, by the CPU backend (gradients in f32).
SgdState cpu_steps(const SgdHyper& h, const std::vector<DecayRun>& runs, const SgdState& start,
                   const std::vector<std::vector<float>>& grads) {
  CpuBackend cpu(1);
  const Shape shape{static_cast<int64_t>(start.w.size())};
  Tensor w = f32_tensor(start.w, shape), m = f32_tensor(start.m, shape);
  for (const std::vector<float>& g : grads) cpu.sgd_step(h, runs, w, f32_tensor(g, shape), m);
  return {values_of(w), values_of(m)};
}

// The same steps by the SgdStep<G> body, gradients in G.
template <class G>
SgdState emulated_steps(const SgdHyper& h, const std::vector<DecayRun>& runs, SgdState state,
                        const std::vector<std::vector<float>>& grads, Grid grid) {
  for (const std::vector<float>& g : grads) {
    const std::vector<G> elements = test::to_elements<G>(g);
    const kernels::SgdStep<G> body{h,
                                   runs.data(),
                                   static_cast<int>(runs.size()),
                                   state.w.data(),
                                   elements.data(),
                                   state.m.data()};
    emulate_grid_stride(body, static_cast<int64_t>(g.size()), grid);
  }
  return state;
}

// Note: the f32 body and the CPU do the same f32 operations in the same order on the same values
// (no wider intermediate), and one compiler with one set of flags builds both (where it fuses a
// product and a sum into an FMA, it fuses the same ones), so they agree to the bit. The
// gradients are bf16-exact, so the bf16 body reads the very numbers the CPU reads, and as
// weights and momentum stay f32 it agrees to the bit as well. (On the GPU, nvcc's own FMAs may
// move the last bit; tests/gpu compares the CUDA op with a tolerance.)
TEST_P(OptimKernel, SgdStepMatchesTheCpuForEveryHyperParameterCase) {
  const std::vector<DecayRun> runs = alternating_runs(n());
  SgdState start{test::bf16_exact_values(n(), 2), test::bf16_exact_values(n(), 3)};
  for (float& w : start.w) w += 1.f / 3.f;  // f32 master weights, not bf16-exact
  const std::vector<std::vector<float>> grads = {test::bf16_exact_values(n(), 4),
                                                 test::bf16_exact_values(n(), 5)};
  for (const float momentum : {0.f, 0.9f})
    for (const bool nesterov : {false, true})
      for (const float decay : {0.f, 5e-2f})
        for (const float grad_scale : {1.f, 0.3f}) {
          const SgdHyper h{0.1f, momentum, decay, nesterov, grad_scale};
          const SgdState want = cpu_steps(h, runs, start, grads);
          const SgdState f32 = emulated_steps<float>(h, runs, start, grads, grid());
          const SgdState bf16 = emulated_steps<HostBf16>(h, runs, start, grads, grid());
          const std::string what = "momentum " + std::to_string(momentum) + " nesterov " +
                                   std::to_string(nesterov) + " decay " + std::to_string(decay) +
                                   " grad_scale " + std::to_string(grad_scale);
          EXPECT_EQ(f32.w, want.w) << what;
          EXPECT_EQ(f32.m, want.m) << what;
          EXPECT_EQ(bf16.w, want.w) << what;
          EXPECT_EQ(bf16.m, want.m) << what;
        }
}

INSTANTIATE_TEST_SUITE_P(SizesAndGrids, OptimKernel,
                         ::testing::Combine(::testing::ValuesIn(kSizes), ::testing::Bool()));

}  // namespace
}  // namespace ringtrain
