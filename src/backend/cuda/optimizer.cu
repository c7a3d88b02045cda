// The optimizer's ops: the finite check of fp16 loss scaling, the update of any rule and the
// per-run sums of squares. The bodies are in ringtrain/backend/kernels/ (finite.hpp, update.hpp
// and one header per rule), where the unit tests run them on the host.
#include <algorithm>

#include "backend_impl.hpp"
#include "launch.cuh"
#include "ringtrain/backend/kernels/finite.hpp"
#include "ringtrain/backend/op_checks.hpp"

namespace ringtrain::cuda {

bool CudaBackend::all_finite(const Tensor& t) {
  Tensor flag = scratch({1}, DType::i32);
  fill(flag, 1);
  dispatch_float("all_finite", t, [&](auto tag) {
    using T = decltype(tag);
    const kernels::AllFinite<T> body{static_cast<const T*>(t.raw()), static_cast<int*>(flag.raw())};
    launch_grid_stride("all_finite", body, t.numel(), compute_);
  });
  return read_scalar(static_cast<const int*>(flag.raw())) == 1;
}

Tensor CudaBackend::upload(const void* data, int64_t bytes) {
  Tensor t = scratch({bytes}, DType::u8);
  RT_CUDA_CHECK(
      cudaMemcpyAsync(t.raw(), data, static_cast<size_t>(bytes), cudaMemcpyHostToDevice, compute_));
  RT_CUDA_CHECK(cudaStreamSynchronize(compute_));  // data is the caller's memory
  return t;
}

const CudaBackend::RunTable& CudaBackend::run_table(const std::vector<DecayRun>& runs) {
  const auto same = [](const DecayRun& a, const DecayRun& b) {
    return a.offset == b.offset && a.size == b.size && a.decay == b.decay;
  };
  RunTable& table = run_table_;
  if (table.runs.size() == runs.size() &&
      std::equal(runs.begin(), runs.end(), table.runs.begin(), same))
    return table;
  std::vector<int> first_piece;
  const std::vector<kernels::RunPiece> pieces = kernels::run_pieces(runs, first_piece);
  table.runs_device = upload(runs.data(), static_cast<int64_t>(runs.size() * sizeof(DecayRun)));
  table.pieces_device =
      upload(pieces.data(), static_cast<int64_t>(pieces.size() * sizeof(kernels::RunPiece)));
  table.first_piece_device =
      upload(first_piece.data(), static_cast<int64_t>(first_piece.size() * sizeof(int)));
  table.piece_count = static_cast<int64_t>(pieces.size());
  table.runs = runs;
  return table;
}

void CudaBackend::optimizer_step(const DeviceRule& rule, const std::vector<DecayRun>& runs,
                                 Tensor& params, const Tensor& grads,
                                 const std::vector<Tensor*>& state, const Tensor& run_values) {
  check_update("optimizer_step", rule, runs, params, grads, state, run_values);
  check_on_device("optimizer_step", rule.hyper);
  check_dtype("optimizer_step", {&params}, DType::f32);
  const RunTable& table = run_table(runs);
  visit_rule_type(rule.kind, [&](auto kind) {
    using H = decltype(kind);
    const auto* h = static_cast<const H*>(rule.hyper.raw());
    dispatch_float("optimizer_step", grads, [&](auto tag) {
      using G = decltype(tag);
      kernels::UpdateTensors<float, G> t{static_cast<const DecayRun*>(table.runs_device.raw()),
                                         static_cast<int>(runs.size()),
                                         static_cast<float*>(params.raw()),
                                         static_cast<const G*>(grads.raw()),
                                         {},
                                         static_cast<const float*>(run_values.raw())};
      for (size_t k = 0; k < state.size(); ++k) t.state[k] = static_cast<float*>(state[k]->raw());
      const kernels::RunIndexed<typename H::template Body<float, G>> body{{h, t}};
      launch_grid_stride(H::kName, body, params.numel(), compute_);
    });
  });
}

void CudaBackend::sum_squares_per_run(const Tensor& x, const std::vector<DecayRun>& runs,
                                      Tensor& out) {
  check_run_sums("sum_squares_per_run", x, runs, out);
  const RunTable& table = run_table(runs);
  Tensor partial = scratch({std::max<int64_t>(1, table.piece_count)}, DType::f32);
  dispatch_float("sum_squares_per_run", x, [&](auto tag) {
    using T = decltype(tag);
    const kernels::PieceSumSquares<T> pieces{
        static_cast<const T*>(x.raw()),
        static_cast<const kernels::RunPiece*>(table.pieces_device.raw()),
        static_cast<float*>(partial.raw())};
    launch_grid_stride("sum_squares_per_run", pieces, table.piece_count, compute_);
  });
  const kernels::RunTotals totals{static_cast<const float*>(partial.raw()),
                                  static_cast<const int*>(table.first_piece_device.raw()),
                                  static_cast<float*>(out.raw())};
  launch_grid_stride("sum_squares_per_run", totals, static_cast<int64_t>(runs.size()), compute_);
}

}  // namespace ringtrain::cuda
