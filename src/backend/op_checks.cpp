#include "ringtrain/backend/op_checks.hpp"

#include <tuple>
#include <variant>

namespace ringtrain {

void check_dtype(const char* op, std::initializer_list<const Tensor*> operands, DType dtype) {
  for (const Tensor* t : operands)
    RT_CHECK(t->dtype() == dtype, op, ": expected ", dtype_name(dtype), " operands, got ",
             t->describe());
}

const char* conv_pass_name(ConvPass pass) {
  switch (pass) {
    case ConvPass::forward:
      return "conv_forward";
    case ConvPass::backward_data:
      return "conv_backward_data";
    case ConvPass::backward_filter:
      return "conv_backward_filter";
  }
  return "conv";
}

void check_conv(ConvPass pass, const ConvGeometry& g, const Tensor& x, const Tensor& w,
                const Tensor& y) {
  const char* op = conv_pass_name(pass);
  RT_CHECK(g.stride > 0 && g.pad >= 0 && g.r > 0 && g.s > 0, op, ": invalid ", g.str());
  RT_CHECK(g.p() > 0 && g.q() > 0, op, ": ", g.str(), ": the input is smaller than the window");
  check_shape(op, pass == ConvPass::backward_data ? "input gradient" : "input", x,
              {g.n, g.c, g.h, g.w});
  check_shape(op, pass == ConvPass::backward_filter ? "weight gradient" : "weight", w,
              {g.k, g.c, g.r, g.s});
  check_shape(op, pass == ConvPass::forward ? "output" : "output gradient", y,
              {g.n, g.k, g.p(), g.q()});
}

void check_pool(const char* op, const PoolGeometry& g, const Tensor& x, const Tensor& y) {
  RT_CHECK(g.stride > 0 && g.pad >= 0 && g.window > 0 && g.p() > 0 && g.q() > 0, op, ": a ", g.h,
           "x", g.w, " input does not fit a ", g.window, "x", g.window, " window with stride ",
           g.stride, " and padding ", g.pad);
  check_shape(op, "input", x, {g.n, g.c, g.h, g.w});
  check_shape(op, "output", y, {g.n, g.c, g.p(), g.q()});
}

int64_t check_norm(const char* op, const Tensor& x, std::initializer_list<const Tensor*> like_x,
                   std::initializer_list<NormSums> sums,
                   std::initializer_list<const Tensor*> vectors) {
  RT_CHECK(x.rank() == 4, op, ": expected a 4-D [N,C,H,W] tensor, got ", x.describe());
  const int64_t c = x.dim(1);
  for (const Tensor* t : like_x) check_same_shape(op, x, *t);
  for (const NormSums& s : sums) check_shape(op, s.what, *s.sums, {2 * c + (s.with_count ? 1 : 0)});
  for (const Tensor* t : vectors) check_shape(op, "per-channel vector", *t, {c});
  return c;
}

LinearDims check_linear(const char* op, const Tensor& x, const Tensor& w) {
  RT_CHECK(x.rank() == 2 && w.rank() == 2, op, ": expected 2-D input and weight, got ",
           x.describe(), " and ", w.describe());
  check_shape(op, "weight", w, {w.dim(0), x.dim(1)});
  return {static_cast<int>(x.dim(0)), static_cast<int>(x.dim(1)), static_cast<int>(w.dim(0))};
}

void check_logits(const char* op, const Tensor& logits, const Tensor& labels) {
  RT_CHECK(logits.rank() == 2, op, ": expected 2-D logits, got ", logits.describe());
  check_shape(op, "labels", labels, {logits.dim(0)});
  RT_CHECK(labels.dtype() == DType::i32, op, ": labels must be i32, got ", labels.describe());
}

void check_augment(const char* op, const Tensor& raw, const Tensor& crops, const Tensor& table,
                   int pad, const Tensor& out) {
  RT_CHECK(raw.rank() == 4 && raw.dtype() == DType::u8 && raw.layout() == Layout::nhwc, op,
           ": expected uint8 NHWC images [N,C,H,W], got ", raw.describe());
  check_shape(op, "output", out, raw.shape());
  RT_CHECK(out.dtype() == DType::f32 || out.dtype() == DType::bf16 || out.dtype() == DType::f16, op,
           ": images are written as f32, bf16 or f16, not ", out.describe());
  check_shape(op, "crops", crops, {raw.dim(0), 3});
  check_shape(op, "table", table, {raw.dim(1) * 256});
  check_dtype(op, {&crops}, DType::i32);
  check_dtype(op, {&table}, DType::f32);
  RT_CHECK(pad >= 0, op, ": padding must be >= 0, got ", pad);
}

void check_runs(const char* op, const std::vector<DecayRun>& runs, int64_t n) {
  int64_t next = 0;
  for (const DecayRun& run : runs) {
    RT_CHECK(run.offset == next && run.size > 0, op, ": the runs must cover the buffer in order; ",
             "run [", run.offset, ", ", run.offset + run.size, ") follows ", next);
    next += run.size;
  }
  RT_CHECK(!runs.empty() && next == n, op, ": the runs cover ", next, " of ", n, " elements");
}

void check_update(const char* op, const DeviceRule& rule, const std::vector<DecayRun>& runs,
                  const Tensor& params, const Tensor& grads, const std::vector<Tensor*>& state,
                  const Tensor& run_values) {
  RT_CHECK(rule.kind < std::variant_size_v<UpdateRule>, op, ": no update rule number ", rule.kind);
  check_runs(op, runs, params.numel());
  RT_CHECK(grads.numel() == params.numel(), op, ": gradients ", grads.describe(),
           " do not match the parameters ", params.describe());
  const auto [name, state_count, values_per_run, bytes] = visit_rule_type(rule.kind, [](auto h) {
    using H = decltype(h);
    return std::tuple<const char*, int, int, int64_t>{H::kName, H::kState, H::kRunValues,
                                                      static_cast<int64_t>(sizeof(H))};
  });
  RT_CHECK(rule.hyper.dtype() == DType::u8 && rule.hyper.numel() >= bytes, op, ": ", name,
           " reads its hyper-parameters from ", bytes, " bytes, got ", rule.hyper.describe());
  RT_CHECK(static_cast<int>(state.size()) == state_count, op, ": ", name, " keeps ", state_count,
           " state tensor(s), got ", state.size());
  for (const Tensor* s : state) {
    check_same_shape(op, params, *s);
    RT_CHECK(s->dtype() == params.dtype(), op, ": state ", s->describe(), " is not in the ",
             "parameters' dtype ", params.describe());
  }
  const int64_t values = int64_t{values_per_run} * static_cast<int64_t>(runs.size());
  if (values == 0) {
    RT_CHECK(!run_values.defined(), op, ": ", name, " reads no values per run, got ",
             run_values.describe());
    return;
  }
  RT_CHECK(run_values.defined() && run_values.numel() == values && run_values.dtype() == DType::f32,
           op, ": ", name, " reads ", values_per_run, " f32 values per run (", values,
           " for these runs), got ", run_values.defined() ? run_values.describe() : "none");
}

void check_run_sums(const char* op, const Tensor& x, const std::vector<DecayRun>& runs,
                    const Tensor& out) {
  check_runs(op, runs, x.numel());
  check_shape(op, "output", out, {static_cast<int64_t>(runs.size())});
  check_dtype(op, {&out}, DType::f32);
}

}  // namespace ringtrain
