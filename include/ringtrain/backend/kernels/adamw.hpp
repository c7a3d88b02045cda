#pragma once
// AdamW with torch.optim.AdamW's semantics (amsgrad and maximize off) as an update body (see
// update.hpp). With g = grad_scale * grad and t the update's number (from 1):
//   w *= 1 - lr * wd                       (decoupled weight decay; runs with decay only)
//   m += (1 - beta1) * (g - m)             (torch's lerp)
//   v = beta2 * v + (1 - beta2) * g * g
//   w -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// eps is added after the bias correction of sqrt(v), as torch does. The factors that depend on
// t alone are computed once per update on the host, in double as torch computes them in Python.
#include "ringtrain/backend/kernels/update.hpp"

namespace ringtrain {

namespace kernels {
template <class W, class G>
struct AdamWStep;
}  // namespace kernels

struct AdamWHyper {
  float decay_factor = 1.0f;     // 1 - lr * weight_decay
  float one_minus_beta1 = 0.1f;  // 1 - beta1
  float beta2 = 0.999f;
  float one_minus_beta2 = 0.001f;      // 1 - beta2
  float step_size = 1e-3f;             // lr / (1 - beta1^t)
  float bias_correction2_sqrt = 1.0f;  // sqrt(1 - beta2^t)
  float eps = 1e-8f;
  float grad_scale = 1.0f;

  // The hyper-parameters of update number `t` (from 1).
  static AdamWHyper at(int64_t t, float lr, float beta1, float beta2, float eps, float weight_decay,
                       float grad_scale);

  static constexpr const char* kName = "adamw";
  static constexpr int kState = 2;  // exp_avg, exp_avg_sq
  static constexpr int kRunValues = 0;
  template <class W, class G>
  using Body = kernels::AdamWStep<W, G>;
};

inline AdamWHyper AdamWHyper::at(int64_t t, float lr, float beta1, float beta2, float eps,
                                 float weight_decay, float grad_scale) {
  const double steps = static_cast<double>(t);
  AdamWHyper h;
  h.decay_factor = static_cast<float>(1.0 - double{lr} * weight_decay);
  h.one_minus_beta1 = static_cast<float>(1.0 - beta1);
  h.beta2 = beta2;
  h.one_minus_beta2 = static_cast<float>(1.0 - beta2);
  h.step_size = static_cast<float>(lr / (1.0 - pow(double{beta1}, steps)));
  h.bias_correction2_sqrt = static_cast<float>(sqrt(1.0 - pow(double{beta2}, steps)));
  h.eps = eps;
  h.grad_scale = grad_scale;
  return h;
}

namespace kernels {

template <class W, class G>
struct AdamWStep {
  const AdamWHyper* hyper;  // in device memory (DeviceRule)
  UpdateTensors<W, G> t;
  using Run = bool;  // whether the run decays
  RT_HOST_DEVICE Run at_run(int run) const { return t.runs[run].decay; }
  RT_HOST_DEVICE void operator()(int64_t i, Run decay) const {
    const AdamWHyper h = *hyper;  // a copy: stores to w, m and v cannot alias it
    W* w = t.w;
    W* m = t.state[0];
    W* v = t.state[1];
    const W g = W(h.grad_scale) * load_grad<W>(t.g[i]);
    if (decay) w[i] *= W(h.decay_factor);
    m[i] += W(h.one_minus_beta1) * (g - m[i]);
    v[i] = v[i] * W(h.beta2) + W(h.one_minus_beta2) * g * g;
    const W denom = square_root(v[i]) / W(h.bias_correction2_sqrt) + W(h.eps);
    w[i] += W(-h.step_size) * m[i] / denom;
  }
};

}  // namespace kernels
}  // namespace ringtrain
