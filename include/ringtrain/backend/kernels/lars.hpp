#pragma once
// LARS (layer-wise adaptive rate scaling) as MLPerf's ResNet-50 reference trains with it:
// TensorFlow's LARSOptimizer (tf.contrib.opt), with batch norm and bias parameters skipped.
// For a run that is adapted (decay set: a conv or linear weight), with g = grad_scale * grad
// and |.| the run's 2-norm:
//   trust = eta * |w| / (|g| + wd * |w| + eps) when |w| > 0 and |g| > 0, else 1
//   d = g + wd * w;  m = momentum * m + d;  w -= lr * trust * m
// A skipped run (batch norm, bias) takes plain momentum without decay: d = g, trust = 1.
// The momentum buffer holds the unscaled direction and the learning rate (with the trust
// ratio) applies at the update, as TensorFlow's ApplyMomentum does.
#include "ringtrain/backend/kernels/update.hpp"

namespace ringtrain {

namespace kernels {
template <class W, class G>
struct LarsStep;
}  // namespace kernels

struct LarsHyper {
  float lr = 0.1f;
  float momentum = 0.9f;
  float weight_decay = 0.0f;
  float eta = 0.001f;  // the trust coefficient
  float eps = 0.0f;
  float grad_scale = 1.0f;

  static constexpr const char* kName = "lars";
  static constexpr int kState = 1;  // momentum
  static constexpr int kRunValues =
      2;  // per run: sum of squares of w, then of grad (run_count apart)
  template <class W, class G>
  using Body = kernels::LarsStep<W, G>;
};

namespace kernels {

// The trust ratio of run `run` from its sums of squares (of the unscaled gradient).
RT_HOST_DEVICE inline float lars_trust(const LarsHyper& h, const float* run_values, int run_count,
                                       int run) {
  const float w_norm = square_root(run_values[run]);
  const float g_norm = h.grad_scale * square_root(run_values[run_count + run]);
  if (!(w_norm > 0.f) || !(g_norm > 0.f)) return 1.f;
  return h.eta * w_norm / (g_norm + h.weight_decay * w_norm + h.eps);
}

template <class W, class G>
struct LarsStep {
  const LarsHyper* hyper;  // in device memory (DeviceRule)
  UpdateTensors<W, G> t;
  // The run's learning rate (scaled by its trust ratio when adapted) and whether it decays.
  struct Run {
    W lr;
    bool adapted;
  };
  RT_HOST_DEVICE Run at_run(int run) const {
    const LarsHyper h = *hyper;
    if (!t.runs[run].decay) return {W(h.lr), false};
    return {W(h.lr) * W(lars_trust(h, t.run_values, t.run_count, run)), true};
  }
  RT_HOST_DEVICE void operator()(int64_t i, const Run& r) const {
    const LarsHyper h = *hyper;
    W* w = t.w;
    W* m = t.state[0];
    W d = W(h.grad_scale) * load_grad<W>(t.g[i]);
    if (r.adapted) d += W(h.weight_decay) * w[i];
    m[i] = W(h.momentum) * m[i] + d;
    w[i] -= r.lr * m[i];
  }
};

}  // namespace kernels
}  // namespace ringtrain
