#pragma once
// PyTorch's SGD step (torch.optim.SGD, dampening 0) as an update body (see update.hpp):
//   d = grad_scale * g + wd * w;  m = momentum * m + d;  d = nesterov ? d + momentum * m : m;
//   w -= lr * d.
// The momentum buffer starts at zero, which equals PyTorch's first-step copy of d.
#include "ringtrain/backend/kernels/update.hpp"

namespace ringtrain {

namespace kernels {
template <class W, class G>
struct SgdStep;
}  // namespace kernels

// Hyper-parameters of one SGD step.
struct SgdHyper {
  float lr = 0.1f;
  float momentum = 0.9f;
  float weight_decay = 0.0f;
  bool nesterov = false;
  float grad_scale = 1.0f;  // gradients are multiplied by this first (1 / the fp16 loss scale)

  static constexpr const char* kName = "sgd";
  static constexpr int kState = 1;  // momentum
  static constexpr int kRunValues = 0;
  template <class W, class G>
  using Body = kernels::SgdStep<W, G>;
};

namespace kernels {

template <class W, class G>
struct SgdStep {
  const SgdHyper* hyper;  // in device memory (DeviceRule)
  UpdateTensors<W, G> t;
  using Run = W;  // the run's weight decay
  RT_HOST_DEVICE Run at_run(int run) const {
    return t.runs[run].decay ? W(hyper->weight_decay) : W(0);
  }
  RT_HOST_DEVICE void operator()(int64_t i, Run wd) const {
    const SgdHyper h = *hyper;  // a copy: stores to w and m cannot alias it
    W* w = t.w;
    W* m = t.state[0];
    const W mu = W(h.momentum);
    W d = W(h.grad_scale) * load_grad<W>(t.g[i]) + wd * w[i];
    if (mu != W(0)) {
      m[i] = mu * m[i] + d;
      d = h.nesterov ? d + mu * m[i] : m[i];
    }
    w[i] -= W(h.lr) * d;
  }
};

}  // namespace kernels
}  // namespace ringtrain
