// The optimiser's kernel bodies of the CUDA backend (the finite check and every update rule), run
// on the host by the grid emulator at sizes that leave the last block partly idle and under a small
// grid that makes every thread stride, against the CPU backend's all_finite and optimizer_step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

#include "host_grid.hpp"
#include "kernel_data.hpp"
#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/backend/kernels/finite.hpp"
#include "ringtrain/backend/kernels/update_rules.hpp"

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

// The weights and a rule's state tensors.
struct UpdateState {
  std::vector<float> w;
  std::vector<std::vector<float>> s;
};

// What a rule reads per run, by the CPU: LARS's sums of squares of w, then of g; none for others.
Tensor run_values(const UpdateRule& rule, const std::vector<DecayRun>& runs, const Tensor& w,
                  const Tensor& g) {
  if (!std::holds_alternative<LarsHyper>(rule)) return Tensor();
  CpuBackend cpu(1);
  const auto r = static_cast<int64_t>(runs.size());
  Tensor values = Tensor::zeros({2 * r}, DType::f32);
  Tensor w_sums = values.slice(0, {r}), g_sums = values.slice(r, {r});
  cpu.sum_squares_per_run(w, runs, w_sums);
  cpu.sum_squares_per_run(g, runs, g_sums);
  return values;
}

// The state after one update per gradient vector, by the CPU backend (gradients in f32).
UpdateState cpu_steps(const UpdateRule& rule, const std::vector<DecayRun>& runs,
                      const UpdateState& start, const std::vector<std::vector<float>>& grads) {
  CpuBackend cpu(1);
  const Shape shape{static_cast<int64_t>(start.w.size())};
  Tensor w = f32_tensor(start.w, shape);
  std::vector<Tensor> state;
  for (const std::vector<float>& s : start.s) state.push_back(f32_tensor(s, shape));
  std::vector<Tensor*> pointers;
  for (Tensor& s : state) pointers.push_back(&s);
  Tensor hyper = Tensor::zeros({hyper_bytes()}, DType::u8);
  for (const std::vector<float>& g : grads) {
    const Tensor g_tensor = f32_tensor(g, shape);
    cpu.optimizer_step(write_rule(cpu, rule, hyper), runs, w, g_tensor, pointers,
                       run_values(rule, runs, w, g_tensor));
  }
  UpdateState end{values_of(w), {}};
  for (const Tensor& s : state) end.s.push_back(values_of(s));
  return end;
}

// The same updates by the rule's body, gradients in G, each element finding its run.
template <class G>
UpdateState emulated_steps(const UpdateRule& rule, const std::vector<DecayRun>& runs,
                           UpdateState state, const std::vector<std::vector<float>>& grads,
                           Grid grid) {
  const Shape shape{static_cast<int64_t>(state.w.size())};
  for (const std::vector<float>& g : grads) {
    const Tensor values = run_values(rule, runs, f32_tensor(state.w, shape), f32_tensor(g, shape));
    const std::vector<G> elements = test::to_elements<G>(g);
    kernels::UpdateTensors<float, G> t{runs.data(),
                                       static_cast<int>(runs.size()),
                                       state.w.data(),
                                       elements.data(),
                                       {},
                                       values.defined() ? values.data<float>() : nullptr};
    for (size_t k = 0; k < state.s.size(); ++k) t.state[k] = state.s[k].data();
    std::visit(
        [&](const auto& h) {
          using H = std::decay_t<decltype(h)>;
          const kernels::RunIndexed<typename H::template Body<float, G>> body{{&h, t}};
          emulate_grid_stride(body, static_cast<int64_t>(g.size()), grid);
        },
        rule);
  }
  return state;
}

// Every element of `got` within `ulps` units in the last place of `want`, or of 1 where `want`
// is smaller: the values here are of order 1, and a sum that cancels (m = 0.9 m + g near 0)
// keeps the rounding error of its terms (FMA contraction: see the note below). 0: the same bits.
void expect_within_ulps(const std::vector<float>& got, const std::vector<float>& want, int ulps,
                        const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_LE(std::fabs(got[i] - want[i]), ulps * FLT_EPSILON * std::max(1.0f, std::fabs(want[i])))
        << what << ", element " << i;
}

// The CPU's updates and the body's under the grid emulator, with f32 and bf16 gradients, must
// agree within `ulps` (see the note below); `what` names the case.
void expect_body_matches_cpu(const UpdateRule& rule, const std::vector<DecayRun>& runs,
                             const UpdateState& start, const std::vector<std::vector<float>>& grads,
                             Grid grid, int ulps, const std::string& what) {
  const UpdateState want = cpu_steps(rule, runs, start, grads);
  const UpdateState f32 = emulated_steps<float>(rule, runs, start, grads, grid);
  const UpdateState bf16 = emulated_steps<HostBf16>(rule, runs, start, grads, grid);
  expect_within_ulps(f32.w, want.w, ulps, what + ", f32 gradients, weights");
  expect_within_ulps(bf16.w, want.w, ulps, what + ", bf16 gradients, weights");
  ASSERT_EQ(f32.s.size(), want.s.size());
  for (size_t k = 0; k < want.s.size(); ++k) {
    const std::string state = ", state " + std::to_string(k);
    expect_within_ulps(f32.s[k], want.s[k], ulps, what + ", f32 gradients" + state);
    expect_within_ulps(bf16.s[k], want.s[k], ulps, what + ", bf16 gradients" + state);
  }
}

// Weights (f32 masters, not bf16-exact), one state tensor and two gradient vectors.
UpdateState start_state(int64_t n) {
  UpdateState start{test::bf16_exact_values(n, 2), {test::bf16_exact_values(n, 3)}};
  for (float& w : start.w) w += 1.f / 3.f;
  return start;
}

std::vector<std::vector<float>> two_gradients(int64_t n) {
  return {test::bf16_exact_values(n, 4), test::bf16_exact_values(n, 5)};
}

// Note: the CPU runs the same body run by run that the grid runs index by index, in f32 on the
// same values (the gradients are bf16-exact, so the bf16 body reads the very numbers the CPU
// reads). Only FMA contraction can differ: with -march on an FMA machine the compiler may fuse
// a product and a sum in one inlined copy of the body and not in the other. SGD's body agrees to
// the bit; LARS's momentum is fused differently in the two, so LARS and AdamW are held to 4 units
// in the last place. A wrong run, state slot or hyper-parameter moves a value by far more. (On
// the GPU, nvcc's own FMAs may move the last bit too; tests/gpu compares the CUDA op with a
// tolerance.)
TEST_P(OptimKernel, SgdStepMatchesTheCpuForEveryHyperParameterCase) {
  const std::vector<DecayRun> runs = alternating_runs(n());
  for (const float momentum : {0.f, 0.9f})
    for (const bool nesterov : {false, true})
      for (const float decay : {0.f, 5e-2f})
        for (const float grad_scale : {1.f, 0.3f})
          expect_body_matches_cpu(SgdHyper{0.1f, momentum, decay, nesterov, grad_scale}, runs,
                                  start_state(n()), two_gradients(n()), grid(), 0,
                                  "momentum " + std::to_string(momentum) + " nesterov " +
                                      std::to_string(nesterov) + " decay " + std::to_string(decay) +
                                      " grad_scale " + std::to_string(grad_scale));
}

// LARS reads each run's sums of squares (here the CPU's, for both): runs with decay are scaled
// by their trust ratio and decayed, the others take plain momentum.
TEST_P(OptimKernel, LarsStepMatchesTheCpuForEveryHyperParameterCase) {
  const std::vector<DecayRun> runs = alternating_runs(n());
  for (const float momentum : {0.f, 0.9f})
    for (const float decay : {0.f, 5e-2f})
      for (const float eps : {0.f, 1e-3f})
        for (const float grad_scale : {1.f, 0.3f})
          expect_body_matches_cpu(LarsHyper{0.1f, momentum, decay, 0.02f, eps, grad_scale}, runs,
                                  start_state(n()), two_gradients(n()), grid(), 4,
                                  "momentum " + std::to_string(momentum) + " decay " +
                                      std::to_string(decay) + " eps " + std::to_string(eps) +
                                      " grad_scale " + std::to_string(grad_scale));
}

// AdamW keeps two state tensors (the second moment non-negative); its decay is decoupled and
// applies to the runs with decay only.
TEST_P(OptimKernel, AdamWStepMatchesTheCpuForEveryHyperParameterCase) {
  const std::vector<DecayRun> runs = alternating_runs(n());
  UpdateState start = start_state(n());
  start.s.push_back(test::bf16_exact_values(n(), 7));
  for (float& v : start.s[1]) v *= v;
  for (const int64_t t : {int64_t{1}, int64_t{1000}})
    for (const float decay : {0.f, 5e-2f})
      for (const float grad_scale : {1.f, 0.3f})
        expect_body_matches_cpu(AdamWHyper::at(t, 1e-2f, 0.9f, 0.999f, 1e-8f, decay, grad_scale),
                                runs, start, two_gradients(n()), grid(), 4,
                                "update " + std::to_string(t) + " decay " + std::to_string(decay) +
                                    " grad_scale " + std::to_string(grad_scale));
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
  Tensor hyper = Tensor::zeros({hyper_bytes()}, DType::u8);
  const std::vector<DecayRun> runs = {{0, 5, true}, {5, 3, false}};
  const auto error = [&](const std::vector<DecayRun>& r, const std::vector<Tensor*>& state,
                         const Tensor& v) -> std::string {
    try {
      cpu.optimizer_step(write_rule(cpu, SgdHyper{}, hyper), r, w, g, state, v);
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
  const auto rule_error = [&](const DeviceRule& rule) -> std::string {
    try {
      cpu.optimizer_step(rule, runs, w, g, {&m}, Tensor());
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(rule_error({0, Tensor::zeros({4}, DType::u8)}).find("sgd reads its hyper-parameters"),
            std::string::npos);
  EXPECT_NE(rule_error({7, hyper}).find("no update rule number 7"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(SizesAndGrids, OptimKernel,
                         ::testing::Combine(::testing::ValuesIn(kSizes), ::testing::Bool()));

}  // namespace
}  // namespace ringtrain
