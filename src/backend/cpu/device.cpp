// The CPU backend's device services: memory, copies, casts and the host clock. Its ops live
// beside it, one file per kind, named as the CUDA backend's: conv.cpp, batch_norm.cpp, pool.cpp,
// classifier.cpp, loss.cpp, elementwise.cpp, augment.cpp, optimizer.cpp.
#include "ringtrain/backend/cpu/cpu_backend.hpp"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "conv_primitives.hpp"
#include "kernels.hpp"
#include "owned_memory.hpp"
#include "ringtrain/core/cpus.hpp"
#include "ringtrain/core/layout.hpp"

namespace ringtrain {

using cpu::dispatch_float;
using cpu::dispatch_float_pair;
using cpu::elementwise;

CpuBackend::CpuBackend(int threads, DType compute)
    : compute_(compute),
      pool_((threads > 0 ? threads : affinity_cores()) - 1),
      conv_(std::make_unique<cpu::ConvPrimitives>(pool_)),
      memory_(cpu::OwnedMemory::of_cpu_backends()) {
  openblas_set_num_threads(1);
}

CpuBackend::~CpuBackend() = default;

std::string CpuBackend::description() const {
  return str_cat(name(), " with ", threads(), " threads per rank (oneDNN kernels up to ",
                 kernel_isa(), ")");
}

Tensor CpuBackend::zeros(const Shape& shape, DType dtype) {
  return memory_->zeros(shape, dtype);
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

int64_t CpuBackend::mark(const char*) {
  return marks_.push(std::chrono::steady_clock::now());
}

double CpuBackend::seconds_between(int64_t from, int64_t to) {
  return std::chrono::duration<double>(marks_.at(to, "seconds_between") -
                                       marks_.at(from, "seconds_between"))
      .count();
}

void CpuBackend::release_marks(int64_t before) {
  marks_.release_before(before, [](auto) {});
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
  if (memory_->contains(src.raw()) && !memory_->contains(dst.raw())) count_value_read();
}

void CpuBackend::write(const void* host, std::size_t bytes, Tensor& dst) {
  RT_CHECK(bytes <= static_cast<std::size_t>(dst.nbytes()), "write: ", bytes, " bytes into ",
           dst.describe());
  std::memcpy(dst.raw(), host, bytes);
}

void CpuBackend::cast(const Tensor& src, Tensor& dst) {
  RT_CHECK(src.numel() == dst.numel(), "cast: ", src.describe(), " into ", dst.describe());
  dispatch_float_pair("cast", src, dst, [&](auto from, auto to) {
    using From = decltype(from);
    using To = decltype(to);
    const From* in = src.data<From>();
    To* out = dst.data<To>();
    elementwise<To>(pool_, src.numel(), [&](int64_t i) { out[i] = static_cast<To>(in[i]); });
  });
}

void CpuBackend::accumulate(Tensor& src, Tensor& dst) {
  RT_CHECK(src.numel() == dst.numel() && src.raw() != dst.raw(), "accumulate: ", src.describe(),
           " into ", dst.describe());
  dispatch_float_pair("accumulate", src, dst, [&](auto from, auto to) {
    using From = decltype(from);
    using To = decltype(to);
    From* in = src.data<From>();
    To* out = dst.data<To>();
    elementwise<To>(pool_, src.numel(), [&](int64_t i) {
      out[i] += static_cast<To>(in[i]);
      in[i] = From{0};
    });
  });
}

}  // namespace ringtrain
