// The optimiser's ops: the finite check of fp16 loss scaling and the SGD step.
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

// PyTorch's SGD: g = grad_scale * g + wd * w; buf = momentum * buf + g; g = nesterov ? g + momentum
// * buf : buf; w -= lr * g. The buffer starts at zero, which equals PyTorch's first-step copy of g.
void CpuBackend::sgd_step(const SgdHyper& h, const std::vector<DecayRun>& runs, Tensor& params,
                          const Tensor& grads, Tensor& momentum) {
  check_same_shape("sgd_step", params, grads);
  check_same_shape("sgd_step", params, momentum);
  dispatch_float("sgd_step", params, [&](auto tag) {
    using T = decltype(tag);
    T *w = params.data<T>(), *m = momentum.data<T>();
    const T* g = grads.data<T>();
    for (const DecayRun& run : runs) {
      RT_CHECK(run.offset >= 0 && run.offset + run.size <= params.numel(), "sgd_step: run [",
               run.offset, ", ", run.offset + run.size, ") outside ", params.describe());
      const T wd = run.decay ? static_cast<T>(h.weight_decay) : T(0);
      const T mu = static_cast<T>(h.momentum), lr = static_cast<T>(h.lr);
      const T gs = static_cast<T>(h.grad_scale);
      elementwise<T>(pool_, run.size, [&](int64_t j) {
        const int64_t i = run.offset + j;
        T d = gs * g[i] + wd * w[i];
        if (mu != T(0)) {
          m[i] = mu * m[i] + d;
          d = h.nesterov ? d + mu * m[i] : m[i];
        }
        w[i] -= lr * d;
      });
    }
  });
}

}  // namespace ringtrain
