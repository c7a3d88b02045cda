// Elementwise ops, global average pooling, the finite check and the SGD step.
#include <algorithm>

#include "backend_impl.hpp"

namespace ringtrain::cuda {
namespace {

template <class T>
__global__ void relu_backward_kernel(const T* y, const T* dy, T* dx, int64_t n) {
  RT_GRID_STRIDE(i, n) dx[i] = to_float(y[i]) > 0.f ? dy[i] : from_float<T>(0.f);
}

template <class T, bool kRelu>
__global__ void add_kernel(const T* a, const T* b, T* y, int64_t n) {
  RT_GRID_STRIDE(i, n) {
    const float v = to_float(a[i]) + to_float(b[i]);
    y[i] = from_float<T>(kRelu ? fmaxf(v, 0.f) : v);
  }
}

template <class T>
__global__ void scale_kernel(T* p, int64_t n, float factor) {
  RT_GRID_STRIDE(i, n) p[i] = from_float<T>(to_float(p[i]) * factor);
}

// NHWC: image n's channel c is every c-th value of its hw x C block.
template <class T>
__global__ void avg_pool_forward_kernel(const T* x, T* y, int64_t n, int64_t hw, int64_t c) {
  RT_GRID_STRIDE(i, n * c) {
    const T* in = x + (i / c) * hw * c + i % c;
    float sum = 0.f;
    for (int64_t p = 0; p < hw; ++p) sum += to_float(in[p * c]);
    y[i] = from_float<T>(sum / static_cast<float>(hw));
  }
}

template <class T>
__global__ void avg_pool_backward_kernel(const T* dy, T* dx, int64_t n, int64_t hw, int64_t c) {
  RT_GRID_STRIDE(i, n * hw * c) {
    const int64_t image = i / (hw * c), channel = i % c;
    dx[i] = from_float<T>(to_float(dy[image * c + channel]) / static_cast<float>(hw));
  }
}

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

void CudaBackend::relu_backward(const Tensor& y, const Tensor& dy, Tensor& dx) {
  check_same_shape("relu_backward", y, dy);
  check_same_shape("relu_backward", y, dx);
  dispatch_float("relu_backward", y, [&](auto tag) {
    using T = decltype(tag);
    relu_backward_kernel<<<blocks_for(y.numel()), kThreads, 0, compute_>>>(
        static_cast<const T*>(y.raw()), static_cast<const T*>(dy.raw()), static_cast<T*>(dx.raw()),
        y.numel());
    RT_CUDA_CHECK_LAUNCH("relu_backward_kernel");
  });
}

void CudaBackend::add(const Tensor& a, const Tensor& b, Tensor& y) {
  launch_add(a, b, y, false);
}

void CudaBackend::add_relu(const Tensor& a, const Tensor& b, Tensor& y) {
  launch_add(a, b, y, true);
}

void CudaBackend::launch_add(const Tensor& a, const Tensor& b, Tensor& y, bool relu) {
  const char* op = relu ? "add_relu" : "add";
  check_same_shape(op, a, b);
  check_same_shape(op, a, y);
  dispatch_float(op, a, [&](auto tag) {
    using T = decltype(tag);
    const auto kernel = relu ? add_kernel<T, true> : add_kernel<T, false>;
    kernel<<<blocks_for(a.numel()), kThreads, 0, compute_>>>(static_cast<const T*>(a.raw()),
                                                             static_cast<const T*>(b.raw()),
                                                             static_cast<T*>(y.raw()), a.numel());
    RT_CUDA_CHECK_LAUNCH(op);
  });
}

void CudaBackend::scale(Tensor& t, double factor) {
  dispatch_float("scale", t, [&](auto tag) {
    using T = decltype(tag);
    scale_kernel<<<blocks_for(t.numel()), kThreads, 0, compute_>>>(
        static_cast<T*>(t.raw()), t.numel(), static_cast<float>(factor));
    RT_CUDA_CHECK_LAUNCH("scale_kernel");
  });
}

void CudaBackend::global_avg_pool_forward(const Tensor& x, Tensor& y) {
  RT_CHECK(x.rank() == 4, "global_avg_pool_forward: expected [N,C,H,W], got ", x.describe());
  check_shape("global_avg_pool_forward", "output", y, {x.dim(0), x.dim(1)});
  dispatch_float("global_avg_pool_forward", x, [&](auto tag) {
    using T = decltype(tag);
    avg_pool_forward_kernel<<<blocks_for(y.numel()), kThreads, 0, compute_>>>(
        static_cast<const T*>(x.raw()), static_cast<T*>(y.raw()), x.dim(0), x.dim(2) * x.dim(3),
        x.dim(1));
    RT_CUDA_CHECK_LAUNCH("avg_pool_forward_kernel");
  });
}

void CudaBackend::global_avg_pool_backward(const Tensor& dy, Tensor& dx) {
  RT_CHECK(dx.rank() == 4, "global_avg_pool_backward: expected [N,C,H,W], got ", dx.describe());
  check_shape("global_avg_pool_backward", "output gradient", dy, {dx.dim(0), dx.dim(1)});
  dispatch_float("global_avg_pool_backward", dx, [&](auto tag) {
    using T = decltype(tag);
    avg_pool_backward_kernel<<<blocks_for(dx.numel()), kThreads, 0, compute_>>>(
        static_cast<const T*>(dy.raw()), static_cast<T*>(dx.raw()), dx.dim(0),
        dx.dim(2) * dx.dim(3), dx.dim(1));
    RT_CUDA_CHECK_LAUNCH("avg_pool_backward_kernel");
  });
}

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
