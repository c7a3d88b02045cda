// The optimiser's kernel bodies of the CUDA backend (the finite check and the SGD step), run on
// the host by the grid emulator at sizes that leave the last block partly idle and under a small
// grid that makes every thread stride, against the CPU backend's all_finite and optimizer_step.
#include <gtest/gtest.h>

#include <cfloat>
#include <limits>

#include "host_grid.hpp"
#include "kernel_data.hpp"
#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/backend/kernels/finite.hpp"
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
  for (const std::vector<float>& g : grads)
    cpu.optimizer_step(h, runs, w, f32_tensor(g, shape), {&m}, Tensor());
  return {values_of(w), values_of(m)};
}

// The same steps by the SgdStep body, gradients in G, each element finding its run.
template <class G>
SgdState emulated_steps(const SgdHyper& h, const std::vector<DecayRun>& runs, SgdState state,
                        const std::vector<std::vector<float>>& grads, Grid grid) {
  for (const std::vector<float>& g : grads) {
    const std::vector<G> elements = test::to_elements<G>(g);
    const kernels::UpdateTensors<float, G> t{runs.data(),      static_cast<int>(runs.size()),
                                             state.w.data(),   elements.data(),
                                             {state.m.data()}, nullptr};
    const kernels::RunIndexed<kernels::SgdStep<float, G>> body{{h, t}};
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

// Per-run sums of squares: the CPU's (the bodies run piece by piece on the thread pool) against
// the sums in double, and the bodies under the grid emulator against the CPU to the bit (the
// order of the additions is the pieces', never the grid's). The runs are long enough here to be
// cut into several pieces.
TEST_P(OptimKernel, SumSquaresPerRunMatchesDoubleAndIsTheSameBitsOnAnyGrid) {
  std::vector<DecayRun> runs = alternating_runs(n() * 3);
  runs.back().size += kernels::kPieceSize * 2 + 17;  // one run of several pieces
  const int64_t total = runs.back().offset + runs.back().size;
  const std::vector<float> x = test::bf16_exact_values(total, 6);
  CpuBackend cpu(2);
  Tensor out = Tensor::zeros({static_cast<int64_t>(runs.size())}, DType::f32);
  cpu.sum_squares_per_run(f32_tensor(x, {total}), runs, out);
  const std::vector<float> got = values_of(out);
  for (size_t r = 0; r < runs.size(); ++r) {
    double want = 0;
    for (int64_t i = runs[r].offset; i < runs[r].offset + runs[r].size; ++i)
      want += double{x[static_cast<size_t>(i)]} * x[static_cast<size_t>(i)];
    EXPECT_NEAR(got[r], want, 1e-5 * want + 1e-30) << "run " << r;
  }
  std::vector<int> first_piece;
  const std::vector<kernels::RunPiece> pieces = kernels::run_pieces(runs, first_piece);
  ASSERT_GT(first_piece.back() - first_piece[runs.size() - 1], 2);
  std::vector<float> partial(pieces.size()), emulated(runs.size());
  emulate_grid_stride(kernels::PieceSumSquares<float>{x.data(), pieces.data(), partial.data()},
                      static_cast<int64_t>(pieces.size()), grid());
  emulate_grid_stride(kernels::RunTotals{partial.data(), first_piece.data(), emulated.data()},
                      static_cast<int64_t>(runs.size()), grid());
  EXPECT_EQ(emulated, got);
}

// An update's operands are checked before any is touched: the rule's count of state tensors,
// runs that cover the buffer, and no per-run values for a rule that reads none.
TEST(OptimizerStep, RefusesOperandsThatDoNotFitTheRule) {
  CpuBackend cpu(1);
  Tensor w = Tensor::zeros({8}, DType::f32), g = Tensor::zeros({8}, DType::f32);
  Tensor m = Tensor::zeros({8}, DType::f32), values = Tensor::zeros({2}, DType::f32);
  const std::vector<DecayRun> runs = {{0, 5, true}, {5, 3, false}};
  const auto error = [&](const std::vector<DecayRun>& r, const std::vector<Tensor*>& state,
                         const Tensor& v) -> std::string {
    try {
      cpu.optimizer_step(SgdHyper{}, r, w, g, state, v);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error(runs, {&m}, Tensor()), "");
  EXPECT_NE(error(runs, {}, Tensor()).find("sgd keeps 1 state tensor(s), got 0"),
            std::string::npos);
  EXPECT_NE(error({{0, 5, true}}, {&m}, Tensor()).find("the runs cover 5 of 8 elements"),
            std::string::npos);
  EXPECT_NE(error({{0, 5, true}, {4, 4, true}}, {&m}, Tensor()).find("follows 5"),
            std::string::npos);
  EXPECT_NE(error(runs, {&m}, values).find("sgd reads no values per run"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(SizesAndGrids, OptimKernel,
                         ::testing::Combine(::testing::ValuesIn(kSizes), ::testing::Bool()));

}  // namespace
}  // namespace ringtrain
