#include "ringtrain/backend/cpu/cpu_backend.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <thread>

#include "kernels.hpp"
#include "ringtrain/backend/cpu/augment_kernel.hpp"
#include "ringtrain/backend/op_checks.hpp"
#include "ringtrain/core/layout.hpp"

namespace ringtrain {
namespace {

// Calls f(T{}) with T the C++ type of a floating dtype.
template <class F>
void dispatch_float(const char* op, const Tensor& t, F&& f) {
  RT_CHECK(t.device().kind == DeviceKind::cpu, op, ": CPU backend got a tensor on ",
           t.device().str());
  if (t.dtype() == DType::f32) {
    f(float{});
  } else if (t.dtype() == DType::f64) {
    f(double{});
  } else {
    throw Error(str_cat(op, ": CPU backend computes in f32 or f64, got ", t.describe()));
  }
}

void check_4d(const char* op, const Tensor& t) {
  RT_CHECK(t.rank() == 4, op, ": expected a 4-D [N,C,H,W] tensor, got ", t.describe());
}

cpu::NormShape norm_shape(const Tensor& x) {
  return {x.dim(0), x.dim(1), x.dim(2) * x.dim(3)};
}

template <class T, class F>
void elementwise(ThreadPool& pool, int64_t n, F&& f) {
  pool.parallel_for(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) f(i);
  });
}

}  // namespace

CpuBackend::CpuBackend(int threads)
    : pool_((threads > 0 ? threads
                         : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))) -
            1) {
  openblas_set_num_threads(1);
}

Tensor CpuBackend::zeros(const Shape& shape, DType dtype) {
  return Tensor::zeros(shape, dtype);
}

void CpuBackend::fill(Tensor& t, double value) {
  if (t.dtype() == DType::i32) {
    std::fill(t.data<int>(), t.data<int>() + t.numel(), static_cast<int>(value));
    return;
  }
  dispatch_float("fill", t, [&](auto tag) {
    using T = decltype(tag);
    std::fill(t.data<T>(), t.data<T>() + t.numel(), static_cast<T>(value));
  });
}

int CpuBackend::mark(const char*) {
  marks_.push_back(std::chrono::steady_clock::now());
  return static_cast<int>(marks_.size()) - 1;
}

double CpuBackend::seconds_between(int from, int to) {
  return std::chrono::duration<double>(marks_.at(static_cast<size_t>(to)) -
                                       marks_.at(static_cast<size_t>(from)))
      .count();
}

std::shared_ptr<void> CpuBackend::host_buffer(std::size_t bytes) {
  return Tensor::zeros({static_cast<int64_t>(bytes)}, DType::u8).shared_storage();
}

void CpuBackend::copy(const Tensor& src, Tensor& dst) {
  RT_CHECK(src.nbytes() == dst.nbytes() && src.dtype() == dst.dtype(), "copy: ", src.describe(),
           " into ", dst.describe());
  if (src.layout() != dst.layout() && src.rank() == 4) {
    convert_layout(src, dst);
  } else {
    std::memcpy(dst.raw(), src.raw(), src.nbytes());
  }
}

void CpuBackend::cast(const Tensor& src, Tensor& dst) {
  RT_CHECK(src.numel() == dst.numel(), "cast: ", src.describe(), " into ", dst.describe());
  dispatch_float("cast", src, [&](auto from) {
    dispatch_float("cast", dst, [&](auto to) {
      using From = decltype(from);
      using To = decltype(to);
      const From* in = src.data<From>();
      To* out = dst.data<To>();
      elementwise<To>(pool_, src.numel(), [&](int64_t i) { out[i] = static_cast<To>(in[i]); });
    });
  });
}

void CpuBackend::augment(const Tensor& raw, const Tensor& crops, const Tensor& table, int pad,
                         Tensor& out) {
  check_augment("augment", raw, crops, table, pad, out);
  const cpu::ImageDims dims{static_cast<int>(raw.dim(2)), static_cast<int>(raw.dim(3)),
                            static_cast<int>(raw.dim(1))};
  const uint8_t* images = raw.data<uint8_t>();
  const int32_t* crop = crops.data<int32_t>();
  const float* values = table.data<float>();
  char* dst = static_cast<char*>(out.raw());
  const int64_t out_bytes = dims.elements() * static_cast<int64_t>(dtype_size(out.dtype()));
  pool_.parallel_for(raw.dim(0), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      cpu::augment_image(images + i * dims.elements(), dims,
                         Crop{crop[3 * i], crop[3 * i + 1], crop[3 * i + 2] != 0}, pad, values,
                         out.dtype(), out.layout(), dst + i * out_bytes);
  });
}

void CpuBackend::conv_forward(const ConvGeometry& g, const Tensor& x, const Tensor& w, Tensor& y) {
  check_conv(ConvPass::forward, g, x, w, y);
  dispatch_float("conv_forward", x, [&](auto tag) {
    using T = decltype(tag);
    cpu::conv_forward<T>(pool_, g, x.data<T>(), w.data<T>(), y.data<T>());
  });
}

void CpuBackend::conv_backward_data(const ConvGeometry& g, const Tensor& dy, const Tensor& w,
                                    Tensor& dx) {
  check_conv(ConvPass::backward_data, g, dx, w, dy);
  dispatch_float("conv_backward_data", dy, [&](auto tag) {
    using T = decltype(tag);
    cpu::conv_backward_data<T>(pool_, g, dy.data<T>(), w.data<T>(), dx.data<T>());
  });
}

void CpuBackend::conv_backward_filter(const ConvGeometry& g, const Tensor& x, const Tensor& dy,
                                      Tensor& dw) {
  check_conv(ConvPass::backward_filter, g, x, dw, dy);
  dispatch_float("conv_backward_filter", x, [&](auto tag) {
    using T = decltype(tag);
    cpu::conv_backward_filter<T>(pool_, g, x.data<T>(), dy.data<T>(), dw.data<T>());
  });
}

void CpuBackend::batch_norm_sums(const Tensor& x, Tensor& sums) {
  check_norm("batch_norm_sums", x, {}, {{"f64 sums", &sums, true}}, {});
  const auto s = norm_shape(x);
  dispatch_float("batch_norm_sums", x, [&](auto tag) {
    using T = decltype(tag);
    cpu::batch_norm_sums<T>(pool_, s, x.data<T>(), sums.data<double>());
  });
}

void CpuBackend::batch_norm_forward_from_sums(const Tensor& x, const Tensor& gamma,
                                              const Tensor& beta, const Tensor& sums,
                                              float momentum, float eps, bool relu, Tensor& y,
                                              Tensor& save_mean, Tensor& save_invstd,
                                              Tensor& running_mean, Tensor& running_var) {
  const char* op = "batch_norm_forward_from_sums";
  check_norm(op, x, {&y}, {{"f64 sums", &sums, true}},
             {&gamma, &beta, &save_mean, &save_invstd, &running_mean, &running_var});
  const auto s = norm_shape(x);
  dispatch_float(op, x, [&](auto tag) {
    using T = decltype(tag);
    cpu::batch_norm_forward_from_sums<T>(pool_, s, x.data<T>(), gamma.data<T>(), beta.data<T>(),
                                         sums.data<double>(), momentum, eps, relu, y.data<T>(),
                                         save_mean.data<T>(), save_invstd.data<T>(),
                                         running_mean.data<T>(), running_var.data<T>());
  });
}

void CpuBackend::batch_norm_forward_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                         const Tensor& running_mean, const Tensor& running_var,
                                         float eps, bool relu, Tensor& y) {
  check_norm("batch_norm_forward_eval", x, {&y}, {}, {&gamma, &beta, &running_mean, &running_var});
  const auto s = norm_shape(x);
  dispatch_float("batch_norm_forward_eval", x, [&](auto tag) {
    using T = decltype(tag);
    cpu::batch_norm_forward_eval<T>(pool_, s, x.data<T>(), gamma.data<T>(), beta.data<T>(),
                                    running_mean.data<T>(), running_var.data<T>(), eps, relu,
                                    y.data<T>());
  });
}

void CpuBackend::batch_norm_backward_sums(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                          const Tensor& beta, const Tensor& save_mean,
                                          const Tensor& save_invstd, bool relu, Tensor& sums) {
  const char* op = "batch_norm_backward_sums";
  check_norm(op, x, {&dy}, {{"f64 sums", &sums, false}}, {&gamma, &beta, &save_mean, &save_invstd});
  const auto s = norm_shape(x);
  dispatch_float(op, x, [&](auto tag) {
    using T = decltype(tag);
    cpu::batch_norm_backward_sums<T>(pool_, s, x.data<T>(), dy.data<T>(), gamma.data<T>(),
                                     beta.data<T>(), save_mean.data<T>(), save_invstd.data<T>(),
                                     relu, sums.data<double>());
  });
}

void CpuBackend::batch_norm_backward_from_sums(const Tensor& x, const Tensor& dy,
                                               const Tensor& gamma, const Tensor& beta,
                                               const Tensor& save_mean, const Tensor& save_invstd,
                                               bool relu, const Tensor& local_sums,
                                               const Tensor& global_sums, double count, Tensor& dx,
                                               Tensor& dgamma, Tensor& dbeta) {
  const char* op = "batch_norm_backward_from_sums";
  check_norm(op, x, {&dy, &dx},
             {{"f64 local sums", &local_sums, false}, {"f64 global sums", &global_sums, false}},
             {&gamma, &beta, &save_mean, &save_invstd, &dgamma, &dbeta});
  const auto s = norm_shape(x);
  dispatch_float(op, x, [&](auto tag) {
    using T = decltype(tag);
    cpu::batch_norm_backward_from_sums<T>(
        pool_, s, x.data<T>(), dy.data<T>(), gamma.data<T>(), beta.data<T>(), save_mean.data<T>(),
        save_invstd.data<T>(), relu, local_sums.data<double>(), global_sums.data<double>(), count,
        dx.data<T>(), dgamma.data<T>(), dbeta.data<T>());
  });
}

void CpuBackend::relu_backward(const Tensor& y, const Tensor& dy, Tensor& dx) {
  check_same_shape("relu_backward", y, dy);
  check_same_shape("relu_backward", y, dx);
  dispatch_float("relu_backward", y, [&](auto tag) {
    using T = decltype(tag);
    const T *out = y.data<T>(), *g = dy.data<T>();
    T* d = dx.data<T>();
    elementwise<T>(pool_, y.numel(), [&](int64_t i) { d[i] = out[i] > T(0) ? g[i] : T(0); });
  });
}

void CpuBackend::add(const Tensor& a, const Tensor& b, Tensor& y) {
  check_same_shape("add", a, b);
  check_same_shape("add", a, y);
  dispatch_float("add", a, [&](auto tag) {
    using T = decltype(tag);
    const T *pa = a.data<T>(), *pb = b.data<T>();
    T* out = y.data<T>();
    elementwise<T>(pool_, a.numel(), [&](int64_t i) { out[i] = pa[i] + pb[i]; });
  });
}

void CpuBackend::scale(Tensor& t, double factor) {
  dispatch_float("scale", t, [&](auto tag) {
    using T = decltype(tag);
    T* p = t.data<T>();
    const T f = static_cast<T>(factor);
    elementwise<T>(pool_, t.numel(), [&](int64_t i) { p[i] *= f; });
  });
}

void CpuBackend::add_relu(const Tensor& a, const Tensor& b, Tensor& y) {
  check_same_shape("add_relu", a, b);
  check_same_shape("add_relu", a, y);
  dispatch_float("add_relu", a, [&](auto tag) {
    using T = decltype(tag);
    const T *pa = a.data<T>(), *pb = b.data<T>();
    T* out = y.data<T>();
    elementwise<T>(pool_, a.numel(), [&](int64_t i) { out[i] = std::max(pa[i] + pb[i], T(0)); });
  });
}

void CpuBackend::max_pool_forward(const PoolGeometry& g, const Tensor& x, Tensor& y) {
  check_pool("max_pool_forward", g, x, y);
  dispatch_float("max_pool_forward", x, [&](auto tag) {
    using T = decltype(tag);
    cpu::max_pool_forward<T>(g, x.data<T>(), y.data<T>());
  });
}

void CpuBackend::max_pool_backward(const PoolGeometry& g, const Tensor& x, const Tensor& y,
                                   const Tensor& dy, Tensor& dx) {
  check_pool("max_pool_backward", g, x, y);
  check_same_shape("max_pool_backward", y, dy);
  check_same_shape("max_pool_backward", x, dx);
  dispatch_float("max_pool_backward", x, [&](auto tag) {
    using T = decltype(tag);
    cpu::max_pool_backward<T>(g, x.data<T>(), y.data<T>(), dy.data<T>(), dx.data<T>());
  });
}

void CpuBackend::global_avg_pool_forward(const Tensor& x, Tensor& y) {
  check_4d("global_avg_pool_forward", x);
  check_shape("global_avg_pool_forward", "output", y, {x.dim(0), x.dim(1)});
  dispatch_float("global_avg_pool_forward", x, [&](auto tag) {
    using T = decltype(tag);
    const int64_t hw = x.dim(2) * x.dim(3);
    const T* in = x.data<T>();
    T* out = y.data<T>();
    elementwise<T>(pool_, y.numel(), [&](int64_t i) {
      T sum = 0;
      for (int64_t j = 0; j < hw; ++j) sum += in[i * hw + j];
      out[i] = sum / static_cast<T>(hw);
    });
  });
}

void CpuBackend::global_avg_pool_backward(const Tensor& dy, Tensor& dx) {
  check_4d("global_avg_pool_backward", dx);
  check_shape("global_avg_pool_backward", "output gradient", dy, {dx.dim(0), dx.dim(1)});
  dispatch_float("global_avg_pool_backward", dx, [&](auto tag) {
    using T = decltype(tag);
    const int64_t hw = dx.dim(2) * dx.dim(3);
    const T* g = dy.data<T>();
    T* d = dx.data<T>();
    elementwise<T>(pool_, dy.numel(), [&](int64_t i) {
      std::fill(d + i * hw, d + (i + 1) * hw, g[i] / static_cast<T>(hw));
    });
  });
}

void CpuBackend::linear_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) {
  const LinearDims d = check_linear("linear_forward", x, w);
  check_shape("linear_forward", "bias", b, {d.m});
  check_shape("linear_forward", "output", y, {d.n, d.m});
  dispatch_float("linear_forward", x, [&](auto tag) {
    using T = decltype(tag);
    cpu::linear_forward<T>(d.n, d.k, d.m, x.data<T>(), w.data<T>(), b.data<T>(), y.data<T>());
  });
}

void CpuBackend::linear_backward(const Tensor& x, const Tensor& w, const Tensor& dy, Tensor* dx,
                                 Tensor& dw, Tensor& db) {
  const LinearDims d = check_linear("linear_backward", x, w);
  check_shape("linear_backward", "output gradient", dy, {d.n, d.m});
  check_shape("linear_backward", "weight gradient", dw, {d.m, d.k});
  check_shape("linear_backward", "bias gradient", db, {d.m});
  if (dx) check_same_shape("linear_backward", x, *dx);
  dispatch_float("linear_backward", x, [&](auto tag) {
    using T = decltype(tag);
    cpu::linear_backward<T>(d.n, d.k, d.m, x.data<T>(), w.data<T>(), dy.data<T>(),
                            dx ? dx->data<T>() : nullptr, dw.data<T>(), db.data<T>());
  });
}

namespace {

void check_labels(const char* op, const Tensor& logits, const Tensor& labels) {
  check_logits(op, logits, labels);
  const int* l = labels.data<int>();
  for (int64_t i = 0; i < labels.numel(); ++i)
    RT_CHECK(l[i] >= 0 && l[i] < logits.dim(1), op, ": label ", l[i], " at row ", i,
             " outside [0, ", logits.dim(1), ")");
}

}  // namespace

double CpuBackend::softmax_cross_entropy(const Tensor& logits, const Tensor& labels,
                                         float smoothing, Tensor* dlogits) {
  check_labels("softmax_cross_entropy", logits, labels);
  if (dlogits) check_same_shape("softmax_cross_entropy", logits, *dlogits);
  double loss = 0;
  dispatch_float("softmax_cross_entropy", logits, [&](auto tag) {
    using T = decltype(tag);
    loss = cpu::softmax_cross_entropy<T>(
        static_cast<int>(logits.dim(0)), static_cast<int>(logits.dim(1)), logits.data<T>(),
        labels.data<int>(), smoothing, dlogits ? dlogits->data<T>() : nullptr);
  });
  return loss;
}

int64_t CpuBackend::count_correct(const Tensor& logits, const Tensor& labels) {
  check_labels("count_correct", logits, labels);
  int64_t correct = 0;
  dispatch_float("count_correct", logits, [&](auto tag) {
    using T = decltype(tag);
    const int64_t classes = logits.dim(1);
    for (int64_t i = 0; i < logits.dim(0); ++i) {
      const T* z = logits.data<T>() + i * classes;
      correct += (std::max_element(z, z + classes) - z) == labels.data<int>()[i];
    }
  });
  return correct;
}

bool CpuBackend::all_finite(const Tensor& t) {
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
