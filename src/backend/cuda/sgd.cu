// The optimiser's ops: the finite check of fp16 loss scaling and the SGD step. The bodies are in
// ringtrain/backend/kernels/sgd.hpp, where the unit tests run them on the host.
#include <algorithm>

#include "backend_impl.hpp"
#include "launch.cuh"
#include "ringtrain/backend/kernels/sgd.hpp"

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
    const kernels::SgdStep<G> body{h,
                                   static_cast<const DecayRun*>(sgd_runs_device_.raw()),
                                   static_cast<int>(runs.size()),
                                   static_cast<float*>(params.raw()),
                                   static_cast<const G*>(grads.raw()),
                                   static_cast<float*>(momentum.raw())};
    launch_grid_stride("sgd_step", body, params.numel(), compute_);
  });
}

}  // namespace ringtrain::cuda
