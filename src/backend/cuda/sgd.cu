// The optimiser's ops: the finite check of fp16 loss scaling and the SGD step.
#include <algorithm>

#include "backend_impl.hpp"

namespace ringtrain::cuda {
namespace {

template <class T>
__global__ void finite_kernel(const T* p, int64_t n, int* all_finite) {
  RT_GRID_STRIDE(i, n) {
    if (!isfinite(to_float(p[i]))) *all_finite = 0;
  }
}

// PyTorch's SGD (see CpuBackend::sgd_step) in one pass over every run: each element finds its
// run by binary search over the run table, so the step is one launch however many runs.
template <class G>
__global__ void sgd_kernel(SgdHyper h, const DecayRun* runs, int run_count, int64_t n, float* w,
                           const G* g, float* m) {
  RT_GRID_STRIDE(i, n) {
    int lo = 0, hi = run_count - 1;
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (runs[mid].offset <= i) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    const float wd = runs[lo].decay ? h.weight_decay : 0.f;
    float d = h.grad_scale * to_float(g[i]) + wd * w[i];
    if (h.momentum != 0.f) {
      m[i] = h.momentum * m[i] + d;
      d = h.nesterov ? d + h.momentum * m[i] : m[i];
    }
    w[i] -= h.lr * d;
  }
}

}  // namespace

bool CudaBackend::all_finite(const Tensor& t) {
  Tensor flag = scratch({1}, DType::i32);
  fill(flag, 1);
  dispatch_float("all_finite", t, [&](auto tag) {
    using T = decltype(tag);
    finite_kernel<<<blocks_for(t.numel()), kThreads, 0, compute_>>>(
        static_cast<const T*>(t.raw()), t.numel(), static_cast<int*>(flag.raw()));
    RT_CUDA_CHECK_LAUNCH("finite_kernel");
  });
  return read_scalar(static_cast<const int*>(flag.raw())) == 1;
}

void CudaBackend::sgd_step(const SgdHyper& h, const std::vector<DecayRun>& runs, Tensor& params,
                           const Tensor& grads, Tensor& momentum) {
  RT_CHECK(params.dtype() == DType::f32 && momentum.dtype() == DType::f32 &&
               params.numel() == grads.numel() && params.numel() == momentum.numel(),
           "sgd_step: expected f32 parameters and momentum with gradients of the same size, got ",
           params.describe(), ", ", momentum.describe(), " and ", grads.describe());
  RT_CHECK(!runs.empty() && runs.front().offset == 0 &&
               runs.back().offset + runs.back().size == params.numel(),
           "sgd_step: the decay runs do not cover ", params.describe());
  const bool same_runs =
      sgd_runs_.size() == runs.size() && std::equal(runs.begin(), runs.end(), sgd_runs_.begin(),
                                                    [](const DecayRun& a, const DecayRun& b) {
                                                      return a.offset == b.offset &&
                                                             a.size == b.size && a.decay == b.decay;
                                                    });
  if (!same_runs) {
    const auto bytes = static_cast<int64_t>(runs.size() * sizeof(DecayRun));
    sgd_runs_device_ = scratch({bytes}, DType::u8);
    RT_CUDA_CHECK(cudaMemcpyAsync(sgd_runs_device_.raw(), runs.data(), bytes,
                                  cudaMemcpyHostToDevice, compute_));
    RT_CUDA_CHECK(cudaStreamSynchronize(compute_));  // runs is the caller's memory
    sgd_runs_ = runs;
  }
  dispatch_float("sgd_step", grads, [&](auto tag) {
    using G = decltype(tag);
    sgd_kernel<<<blocks_for(params.numel()), kThreads, 0, compute_>>>(
        h, static_cast<const DecayRun*>(sgd_runs_device_.raw()), static_cast<int>(runs.size()),
        params.numel(), static_cast<float*>(params.raw()), static_cast<const G*>(grads.raw()),
        static_cast<float*>(momentum.raw()));
    RT_CUDA_CHECK_LAUNCH("sgd_kernel");
  });
}

}  // namespace ringtrain::cuda
