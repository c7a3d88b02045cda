// Convolution: f32 through oneDNN's convolution primitives (conv_primitives.cpp), f64 (the
// reference of the finite-difference checks) as im2col + one BLAS GEMM per group of images. Small
// feature maps are grouped so that every GEMM has at least kMinColumns columns (the 4x4 maps of the
// last ResNet stage would otherwise give GEMMs too thin to run at speed); groups run in parallel on
// the pool with a single-threaded BLAS, and every group's scratch is private to the thread running
// it.
#include <algorithm>
#include <cstring>
#include <functional>
#include <type_traits>
#include <vector>

#include "conv_primitives.hpp"
#include "kernels.hpp"
#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/backend/op_checks.hpp"
#include "ringtrain/core/error.hpp"

namespace ringtrain::cpu {
namespace {

constexpr int64_t kMinColumns = 512;

struct Plan {
  ConvGeometry g;
  int64_t pq, crs;
  int images_per_group, groups;
  bool pointwise;  // 1x1, stride 1, no padding: the input already is the column matrix
};

Plan make_plan(const ConvGeometry& g) {
  Plan p{g, int64_t{g.p()} * g.q(), int64_t{g.c} * g.r * g.s, 1, 0, false};
  p.images_per_group =
      static_cast<int>(std::clamp<int64_t>((kMinColumns + p.pq - 1) / p.pq, 1, g.n));
  p.groups = (g.n + p.images_per_group - 1) / p.images_per_group;
  p.pointwise = g.r == 1 && g.s == 1 && g.stride == 1 && g.pad == 0;
  return p;
}

template <class T>
T* scratch(int slot, int64_t size) {
  thread_local std::vector<T> buffers[3];
  auto& b = buffers[slot];
  if (static_cast<int64_t>(b.size()) < size) b.resize(static_cast<size_t>(size));
  return b.data();
}

// Output columns ow whose input column ow*stride - pad + j lies inside [0, w): [lo, hi).
struct ValidRange {
  int lo, hi;
};
ValidRange valid_outputs(int j, int pad, int stride, int w, int q) {
  const int first = std::clamp(ceil_div(pad - j, stride), 0, q);
  const int last = floor_div(w - 1 + pad - j, stride);  // negative when no column is inside
  return {first, std::clamp(last + 1, first, q)};
}

// col[(ci*r+i)*s+j][col0 + oh*q+ow] = x[ci][oh*stride-pad+i][ow*stride-pad+j] (0 outside).
// The valid columns of a row are one contiguous range, so the inner loop has no branches.
template <class T>
void im2col(const Plan& p, const T* x, T* col, int64_t ld, int64_t col0) {
  const ConvGeometry& g = p.g;
  const int P = g.p(), Q = g.q();
  for (int ci = 0; ci < g.c; ++ci)
    for (int i = 0; i < g.r; ++i)
      for (int j = 0; j < g.s; ++j) {
        T* row = col + ((int64_t{ci} * g.r + i) * g.s + j) * ld + col0;
        const T* plane = x + int64_t{ci} * g.h * g.w;
        const ValidRange v = valid_outputs(j, g.pad, g.stride, g.w, Q);
        for (int oh = 0; oh < P; ++oh) {
          T* out = row + int64_t{oh} * Q;
          const int ih = oh * g.stride - g.pad + i;
          if (ih < 0 || ih >= g.h) {
            std::fill(out, out + Q, T(0));
            continue;
          }
          std::fill(out, out + v.lo, T(0));
          std::fill(out + v.hi, out + Q, T(0));
          const T* in = plane + int64_t{ih} * g.w;
          const int shift = j - g.pad;  // input column = ow * stride + shift
          if (g.stride == 1) {
            std::copy(in + v.lo + shift, in + v.hi + shift, out + v.lo);
          } else {
            for (int ow = v.lo; ow < v.hi; ++ow) out[ow] = in[ow * g.stride + shift];
          }
        }
      }
}

// The adjoint of im2col: dx (already zeroed) += scatter of dcol.
template <class T>
void col2im(const Plan& p, const T* col, int64_t ld, int64_t col0, T* dx) {
  const ConvGeometry& g = p.g;
  const int P = g.p(), Q = g.q();
  for (int ci = 0; ci < g.c; ++ci)
    for (int i = 0; i < g.r; ++i)
      for (int j = 0; j < g.s; ++j) {
        const T* row = col + ((int64_t{ci} * g.r + i) * g.s + j) * ld + col0;
        T* plane = dx + int64_t{ci} * g.h * g.w;
        const ValidRange v = valid_outputs(j, g.pad, g.stride, g.w, Q);
        for (int oh = 0; oh < P; ++oh) {
          const int ih = oh * g.stride - g.pad + i;
          if (ih < 0 || ih >= g.h) continue;
          const T* in = row + int64_t{oh} * Q;
          T* out = plane + int64_t{ih} * g.w;
          const int shift = j - g.pad;
          for (int ow = v.lo; ow < v.hi; ++ow) out[ow * g.stride + shift] += in[ow];
        }
      }
}

// Copies image-major blocks [image][rows][pq] to/from a row-major [rows][images*pq] matrix.
template <class T>
void gather_columns(const T* src, int64_t rows, int64_t pq, int images, T* dst) {
  for (int n = 0; n < images; ++n)
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(dst + r * images * pq + n * pq, src + (n * rows + r) * pq, sizeof(T) * pq);
}
template <class T>
void scatter_columns(const T* src, int64_t rows, int64_t pq, int images, T* dst) {
  for (int n = 0; n < images; ++n)
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(dst + (n * rows + r) * pq, src + r * images * pq + n * pq, sizeof(T) * pq);
}

// Column matrix [crs][images*pq] of images [n0, n0+images); may point straight into x.
template <class T>
const T* columns_of(const Plan& p, const T* x, int n0, int images) {
  const ConvGeometry& g = p.g;
  const int64_t in_image = int64_t{g.c} * g.h * g.w;
  if (p.pointwise && images == 1) return x + n0 * in_image;
  const int64_t ld = images * p.pq;
  T* col = scratch<T>(0, p.crs * ld);
  if (p.pointwise) {
    gather_columns(x + n0 * in_image, p.crs, p.pq, images, col);
  } else {
    for (int i = 0; i < images; ++i) im2col(p, x + (n0 + i) * in_image, col, ld, i * p.pq);
  }
  return col;
}

// Output-gradient columns [k][images*pq] of images [n0, n0+images); may point straight into dy.
template <class T>
const T* gradient_columns(const Plan& p, const T* dy, int n0, int images) {
  const T* dout = dy + n0 * int64_t{p.g.k} * p.pq;
  if (images == 1) return dout;
  T* gathered = scratch<T>(1, p.g.k * images * p.pq);
  gather_columns(dout, p.g.k, p.pq, images, gathered);
  return gathered;
}

// The groups are split into this many contiguous parts, one per thread.
int64_t part_count(const ThreadPool& pool, const Plan& p) {
  return std::min<int64_t>(p.groups, pool.size() + 1);
}

void for_each_group(ThreadPool& pool, const Plan& p,
                    const std::function<void(int64_t part, int n0, int images)>& body) {
  const int64_t parts = part_count(pool, p);
  pool.parallel_for(parts, [&](int64_t b, int64_t e) {
    for (int64_t part = b; part < e; ++part)
      for (int64_t gi = p.groups * part / parts; gi < p.groups * (part + 1) / parts; ++gi) {
        const int n0 = static_cast<int>(gi) * p.images_per_group;
        body(part, n0, std::min(p.images_per_group, p.g.n - n0));
      }
  });
}

template <class T>
void conv_forward(ThreadPool& pool, const ConvGeometry& g, const T* x, const T* w, T* y) {
  const Plan p = make_plan(g);
  const int64_t out_image = int64_t{g.k} * p.pq;
  for_each_group(pool, p, [&](int64_t, int n0, int images) {
    const int64_t ld = images * p.pq;
    const T* col = columns_of(p, x, n0, images);
    T* out = images == 1 ? y + n0 * out_image : scratch<T>(1, g.k * ld);
    gemm(false, false, g.k, static_cast<int>(ld), static_cast<int>(p.crs), T(1), w,
         static_cast<int>(p.crs), col, static_cast<int>(ld), T(0), out, static_cast<int>(ld));
    if (images > 1) scatter_columns(out, g.k, p.pq, images, y + n0 * out_image);
  });
}

template <class T>
void conv_backward_data(ThreadPool& pool, const ConvGeometry& g, const T* dy, const T* w, T* dx) {
  const Plan p = make_plan(g);
  const int64_t in_image = int64_t{g.c} * g.h * g.w;
  for_each_group(pool, p, [&](int64_t, int n0, int images) {
    const int64_t ld = images * p.pq;
    const T* dout = gradient_columns(p, dy, n0, images);
    T* dimage = dx + n0 * in_image;
    const bool direct = p.pointwise && images == 1;
    T* dcol = direct ? dimage : scratch<T>(0, p.crs * ld);
    gemm(true, false, static_cast<int>(p.crs), static_cast<int>(ld), g.k, T(1), w,
         static_cast<int>(p.crs), dout, static_cast<int>(ld), T(0), dcol, static_cast<int>(ld));
    if (direct) return;
    if (p.pointwise) {
      scatter_columns(dcol, p.crs, p.pq, images, dimage);
      return;
    }
    std::fill(dimage, dimage + images * in_image, T(0));
    for (int i = 0; i < images; ++i) col2im(p, dcol, ld, i * p.pq, dimage + i * in_image);
  });
}

template <class T>
void conv_backward_filter(ThreadPool& pool, const ConvGeometry& g, const T* x, const T* dy, T* dw) {
  const Plan p = make_plan(g);
  const int64_t wsize = g.k * p.crs;
  const int64_t parts = part_count(pool, p);
  // One partial sum per part, added in a fixed order so the result does not depend on timing.
  std::vector<std::vector<T>> partial(static_cast<size_t>(parts), std::vector<T>(wsize, T(0)));
  for_each_group(pool, p, [&](int64_t part, int n0, int images) {
    const int64_t ld = images * p.pq;
    const T* col = columns_of(p, x, n0, images);
    const T* dout = gradient_columns(p, dy, n0, images);
    gemm(false, true, g.k, static_cast<int>(p.crs), static_cast<int>(ld), T(1), dout,
         static_cast<int>(ld), col, static_cast<int>(ld), T(1), partial[part].data(),
         static_cast<int>(p.crs));
  });
  for (const std::vector<T>& sum : partial)
    for (int64_t i = 0; i < wsize; ++i) dw[i] += sum[i];
}

}  // namespace

}  // namespace ringtrain::cpu

namespace ringtrain {

using cpu::dispatch_float;

void CpuBackend::conv_forward(const ConvGeometry& g, const Tensor& x, const Tensor& w, Tensor& y) {
  check_conv(ConvPass::forward, g, x, w, y);
  dispatch_float("conv_forward", x, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float>) {
      conv_->forward(g, x.data<T>(), w.data<T>(), y.data<T>());
    } else {
      cpu::conv_forward<T>(pool_, g, x.data<T>(), w.data<T>(), y.data<T>());
    }
  });
}

void CpuBackend::conv_backward_data(const ConvGeometry& g, const Tensor& dy, const Tensor& w,
                                    Tensor& dx) {
  check_conv(ConvPass::backward_data, g, dx, w, dy);
  dispatch_float("conv_backward_data", dy, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float>) {
      conv_->backward_data(g, dy.data<T>(), w.data<T>(), dx.data<T>());
    } else {
      cpu::conv_backward_data<T>(pool_, g, dy.data<T>(), w.data<T>(), dx.data<T>());
    }
  });
}

void CpuBackend::conv_backward_filter(const ConvGeometry& g, const Tensor& x, const Tensor& dy,
                                      Tensor& dw) {
  check_conv(ConvPass::backward_filter, g, x, dw, dy);
  dispatch_float("conv_backward_filter", x, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float>) {
      conv_->backward_filter(g, x.data<T>(), dy.data<T>(), dw.data<T>());
    } else {
      cpu::conv_backward_filter<T>(pool_, g, x.data<T>(), dy.data<T>(), dw.data<T>());
    }
  });
}

}  // namespace ringtrain
