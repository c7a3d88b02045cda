// The optimizer's ops: the finite check of fp16 loss scaling, the update of any rule and the
// per-run sums of squares. The update and the sums run the kernel bodies the CUDA backend
// launches (ringtrain/backend/kernels/), run by run on the thread pool.
#include <algorithm>
#include <cmath>

#include "kernels.hpp"
#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/backend/op_checks.hpp"

namespace ringtrain {

using cpu::dispatch_float;
using cpu::elementwise;

bool CpuBackend::all_finite(const Tensor& t) {
  count_value_read();
  bool finite = true;
  dispatch_float("all_finite", t, [&](auto tag) {
    using T = decltype(tag);
    const T* p = t.data<T>();
    finite = std::all_of(p, p + t.numel(), [](T v) { return std::isfinite(v); });
  });
  return finite;
}

void CpuBackend::optimizer_step(const DeviceRule& rule, const std::vector<DecayRun>& runs,
                                Tensor& params, const Tensor& grads,
                                const std::vector<Tensor*>& state, const Tensor& run_values) {
  check_update("optimizer_step", rule, runs, params, grads, state, run_values);
  check_dtype("optimizer_step", {&grads}, params.dtype());
  visit_rule_type(rule.kind, [&](auto kind) {
    using H = decltype(kind);
    const auto* h = static_cast<const H*>(rule.hyper.raw());
    dispatch_float("optimizer_step", params, [&](auto tag) {
      using T = decltype(tag);
      kernels::UpdateTensors<T, T> t{runs.data(),
                                     static_cast<int>(runs.size()),
                                     params.data<T>(),
                                     grads.data<T>(),
                                     {},
                                     run_values.defined() ? run_values.data<float>() : nullptr};
      for (size_t k = 0; k < state.size(); ++k) t.state[k] = state[k]->data<T>();
      const typename H::template Body<T, T> body{h, t};
      for (int r = 0; r < static_cast<int>(runs.size()); ++r) {
        const int64_t offset = runs[r].offset;
        const auto run = body.at_run(r);
        elementwise<T>(pool_, runs[r].size, [&](int64_t j) { body(offset + j, run); });
      }
    });
  });
}

void CpuBackend::sum_squares_per_run(const Tensor& x, const std::vector<DecayRun>& runs,
                                     Tensor& out) {
  check_run_sums("sum_squares_per_run", x, runs, out);
  std::vector<int> first_piece;
  const std::vector<kernels::RunPiece> pieces = kernels::run_pieces(runs, first_piece);
  std::vector<float> partial(pieces.size());
  dispatch_float("sum_squares_per_run", x, [&](auto tag) {
    using T = decltype(tag);
    const kernels::PieceSumSquares<T> body{x.data<T>(), pieces.data(), partial.data()};
    elementwise<T>(pool_, static_cast<int64_t>(pieces.size()), body);
  });
  const kernels::RunTotals totals{partial.data(), first_piece.data(), out.data<float>()};
  for (int64_t r = 0; r < static_cast<int64_t>(runs.size()); ++r) totals(r);
}

}  // namespace ringtrain
