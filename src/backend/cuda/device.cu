// The CUDA backend's device, streams, memory and copies. The ops live beside it, one file per
// kind, named as the CPU backend's: conv.cu, batch_norm.cu, pool.cu, elementwise.cu,
// classifier.cu, loss.cu, augment.cu, sgd.cu.
#include <algorithm>
#include <cstring>
#include <vector>

#include <nvtx3/nvToolsExt.h>

#include "backend_impl.hpp"
#include "launch.cuh"
#include "ringtrain/backend/cuda/architectures.hpp"
#include "ringtrain/backend/kernels/elementwise.hpp"
#include "ringtrain/core/half.hpp"
#include "ringtrain/core/layout.hpp"

namespace ringtrain::cuda {
namespace {

void* raw_device_alloc(std::size_t bytes) {
  void* p = nullptr;
  const cudaError_t status = cudaMalloc(&p, bytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // out of memory is an answer here: the cache frees and retries
    return nullptr;
  }
  RT_CUDA_CHECK(status);
  return p;
}

// The bit pattern of `value` as one element of `dtype`, for the fill kernel.
uint64_t element_bits(DType dtype, double value) {
  uint64_t bits = 0;
  switch (dtype) {
    case DType::f32: {
      const float f = static_cast<float>(value);
      std::memcpy(&bits, &f, 4);
      break;
    }
    case DType::f64:
      std::memcpy(&bits, &value, 8);
      break;
    case DType::bf16:
      bits = float_to_bf16(static_cast<float>(value));
      break;
    case DType::f16:
      bits = float_to_f16(static_cast<float>(value));
      break;
    case DType::i32: {
      const int32_t i = static_cast<int32_t>(value);
      std::memcpy(&bits, &i, 4);
      break;
    }
    case DType::u8:
      bits = static_cast<uint8_t>(value);
      break;
  }
  return bits;
}

template <class U>
void launch_fill(Tensor& t, uint64_t bits, cudaStream_t stream) {
  const kernels::Fill<U> body{static_cast<U*>(t.raw()), static_cast<U>(bits)};
  launch_grid_stride("fill", body, t.numel(), stream);
}

// The GPU against the architectures this build's kernels were compiled for
// (RINGTRAIN_CUDA_ARCHITECTURES, from CMake), before any kernel runs.
void require_built_architecture(const CudaOptions& options) {
  cudaDeviceProp prop{};
  RT_CUDA_CHECK(cudaGetDeviceProperties(&prop, options.device));
  require_cuda_architecture(GpuIdentity{options.device, prop.name, prop.major, prop.minor},
                            RINGTRAIN_CUDA_ARCHITECTURES, options.rank);
}

}  // namespace

CudaBackend::CudaBackend(const CudaOptions& options) : options_(options) {
  set_error_context(options.rank, options.device);
  RT_CHECK(options.compute == DType::f32 || options.compute == DType::bf16 ||
               options.compute == DType::f16,
           "CUDA backend: compute dtype must be f32, bf16 or f16, got ",
           dtype_name(options.compute));
  RT_CUDA_CHECK(cudaSetDevice(options.device));
  require_built_architecture(options);
  RT_CUDA_CHECK(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking));
  RT_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking));
  RT_CUDA_CHECK(cudaEventCreateWithFlags(&compute_mark_, cudaEventDisableTiming));
  RT_CUDA_CHECK(cudaEventCreateWithFlags(&copies_done_, cudaEventDisableTiming));
  RT_CUDA_CHECK(cudnnCreate(&cudnn_));
  RT_CUDA_CHECK(cudnnSetStream(cudnn_, compute_));
  RT_CUDA_CHECK(cublasCreate(&cublas_));
  RT_CUDA_CHECK(cublasSetStream(cublas_, compute_));
  RT_CUDA_CHECK(cudaMallocHost(&host_scalar_, sizeof(double)));
  staging_ = std::make_unique<HostStaging>();
  RT_CUDA_CHECK(
      cudaMallocHost(reinterpret_cast<void**>(&loss_log_host_), sizeof(kernels::LossLog)));
  memory_ = std::make_shared<BlockCache>(raw_device_alloc,
                                         [](void* p) { warn_on_error(cudaFree(p), "cudaFree"); });
  loss_log_ = zeros({static_cast<int64_t>(sizeof(kernels::LossLog))}, DType::u8);
  arrivals_ = zeros({1}, DType::i32);
  // Note: cuBLAS's workspace is ours, so that a captured step (a CUDA graph) never has cuBLAS
  // allocate one inside the capture; 32 MiB is what NVIDIA advises for Hopper, enough below it.
  cublas_workspace_ = zeros({int64_t{32} << 20}, DType::u8);
  RT_CUDA_CHECK(cublasSetWorkspace(cublas_, cublas_workspace_.raw(),
                                   static_cast<size_t>(cublas_workspace_.nbytes())));
  if (!options.conv_algo_cache.empty() && !options.deterministic) {
    cudaDeviceProp prop{};
    RT_CUDA_CHECK(cudaGetDeviceProperties(&prop, options.device));
    const ConvAlgoContext context{prop.name, static_cast<int>(cudnnGetVersion())};
    algo_file_ = std::make_unique<ConvAlgoFile>(options.conv_algo_cache, context,
                                                warn_on_rank0(options.rank));
  }
}

CudaBackend::~CudaBackend() {
  if (capture_) abandon_capture();  // an error ended the work being captured
  warn_on_error(cudaStreamSynchronize(compute_), "cudaStreamSynchronize(compute)");
  warn_on_error(cudaStreamSynchronize(copy_), "cudaStreamSynchronize(copy)");
  drop_capture();
  workspace_ = Tensor();
  cublas_workspace_ = Tensor();
  for (cudaEvent_t e : marks_.values()) warn_on_error(cudaEventDestroy(e), "cudaEventDestroy");
  for (cudaEvent_t e : free_marks_) warn_on_error(cudaEventDestroy(e), "cudaEventDestroy");
  warn_on_error(cudaFreeHost(host_scalar_), "cudaFreeHost");
  staging_.reset();
  loss_log_ = Tensor();
  warn_on_error(cudaFreeHost(loss_log_host_), "cudaFreeHost");
  warn_on_error(cublasDestroy(cublas_), "cublasDestroy");
  conv_descriptors_.clear();
  warn_on_error(cudnnDestroy(cudnn_), "cudnnDestroy");
  warn_on_error(cudaEventDestroy(copies_done_), "cudaEventDestroy");
  warn_on_error(cudaEventDestroy(compute_mark_), "cudaEventDestroy");
  warn_on_error(cudaStreamDestroy(copy_), "cudaStreamDestroy");
  warn_on_error(cudaStreamDestroy(compute_), "cudaStreamDestroy");
}

std::string CudaBackend::name() const {
  cudaDeviceProp prop{};
  RT_CUDA_CHECK(cudaGetDeviceProperties(&prop, options_.device));
  return str_cat("cuda:", options_.device, " (", prop.name, ", ", dtype_name(options_.compute),
                 ")");
}

Tensor CudaBackend::zeros(const Shape& shape, DType dtype) {
  Tensor t = scratch(shape, dtype);
  RT_CUDA_CHECK(cudaMemsetAsync(t.raw(), 0, t.nbytes(), compute_));
  return t;
}

Tensor CudaBackend::scratch(const Shape& shape, DType dtype) {
  const std::size_t bytes = static_cast<std::size_t>(shape_numel(shape)) * dtype_size(dtype);
  std::shared_ptr<void> storage;
  if (capture_) {
    std::shared_ptr<CapturePool> pool = capture_->pool;
    storage.reset(pool->allocate(bytes),
                  [pool, bytes](void* block) { pool->release(block, bytes); });
  } else {
    std::shared_ptr<BlockCache> cache = memory_;
    storage.reset(cache->allocate(bytes),
                  [cache, bytes](void* block) { cache->release(block, bytes); });
  }
  return Tensor::adopt(std::move(storage), shape, dtype, device_id(), Layout::nhwc);
}

void* CudaBackend::workspace(std::size_t bytes) {
  if (workspace_.nbytes() < bytes) {
    // The captured convolutions before this one use the old workspace: it must not go back.
    RT_CHECK(!capture_, "cuDNN's workspace would grow from ", workspace_.nbytes(), " to ", bytes,
             " bytes inside a captured step (--cuda-graph): its first two steps should have sized "
             "it; rerun without --cuda-graph and report this");
    workspace_ = Tensor();  // give the old one back before taking a larger one
    workspace_ = scratch({static_cast<int64_t>(bytes)}, DType::u8);
  }
  return workspace_.raw();
}

void CudaBackend::fill(Tensor& t, double value) {
  check_on_device("fill", t);
  const uint64_t bits = element_bits(t.dtype(), value);
  switch (dtype_size(t.dtype())) {
    case 1:
      return launch_fill<uint8_t>(t, bits, compute_);
    case 2:
      return launch_fill<uint16_t>(t, bits, compute_);
    case 4:
      return launch_fill<uint32_t>(t, bits, compute_);
    default:
      return launch_fill<uint64_t>(t, bits, compute_);
  }
}

// Note: a copy from another CUDA device goes through cudaMemcpyPeerAsync, which the driver routes
// peer to peer when peer access is enabled (enable_peer_access) and through host memory
// otherwise. The caller synchronizes the source side first; the copy is complete on return, so
// the source device may be written again at once.
void CudaBackend::copy_between_devices(const Tensor& src, Tensor& dst) {
  const int from = src.device().index, to = dst.device().index;
  if (from == to) {
    RT_CUDA_CHECK(
        cudaMemcpyAsync(dst.raw(), src.raw(), src.nbytes(), cudaMemcpyDeviceToDevice, compute_));
    return;
  }
  RT_CUDA_CHECK(cudaMemcpyPeerAsync(dst.raw(), to, src.raw(), from, src.nbytes(), compute_));
  RT_CUDA_CHECK(cudaStreamSynchronize(compute_));
}

void CudaBackend::write(const void* host, std::size_t bytes, Tensor& dst) {
  check_on_device("write", dst);
  RT_CHECK(!capture_,
           "write: inside a captured step, where a replay would read the staging slot "
           "of another step; write before the capture");
  RT_CHECK(bytes <= static_cast<std::size_t>(dst.nbytes()), "write: ", bytes, " bytes into ",
           dst.describe());
  staging_->write(host, bytes, dst.raw(), compute_);
}

// Host memory is transposed on the host when layouts differ; copies that touch the host are
// complete on return, so the host side may be freed at once.
void CudaBackend::copy(const Tensor& src, Tensor& dst) {
  RT_CHECK(src.nbytes() == dst.nbytes() && src.dtype() == dst.dtype(), "copy: ", src.describe(),
           " into ", dst.describe());
  const bool from_host = src.device().kind == DeviceKind::cpu;
  const bool to_host = dst.device().kind == DeviceKind::cpu;
  const bool transpose = src.layout() != dst.layout() && src.rank() == 4;
  RT_CHECK(!(transpose && !from_host && !to_host),
           "copy: device tensors of different layouts: ", src.describe(), " into ", dst.describe());
  if (from_host && to_host) {
    convert_layout(src, dst);
    return;
  }
  if (!from_host && !to_host) {
    copy_between_devices(src, dst);
    return;
  }
  Tensor staging =
      transpose ? Tensor::zeros(src.shape(), src.dtype(), from_host ? dst.layout() : src.layout())
                : Tensor();
  if (from_host) {
    if (transpose) convert_layout(src, staging);
    const void* host = transpose ? staging.raw() : src.raw();
    RT_CUDA_CHECK(cudaMemcpyAsync(dst.raw(), host, src.nbytes(), cudaMemcpyHostToDevice, compute_));
    RT_CUDA_CHECK(cudaStreamSynchronize(compute_));
    return;
  }
  void* host = transpose ? staging.raw() : dst.raw();
  RT_CUDA_CHECK(cudaMemcpyAsync(host, src.raw(), src.nbytes(), cudaMemcpyDeviceToHost, compute_));
  RT_CUDA_CHECK(cudaStreamSynchronize(compute_));
  count_value_read();
  if (transpose) convert_layout(staging, dst);
}

// Launches Body<From, To>{src, dst} over src's elements, for src's and dst's dtypes.
template <template <class, class> class Body>
void launch_pair(const char* op, const Tensor& src, Tensor& dst, cudaStream_t stream) {
  dispatch_float(op, src, [&](auto from) {
    dispatch_float(op, dst, [&](auto to) {
      using From = decltype(from);
      using To = decltype(to);
      const Body<From, To> body{static_cast<From*>(src.raw()), static_cast<To*>(dst.raw())};
      launch_grid_stride(op, body, src.numel(), stream);
    });
  });
}

void CudaBackend::cast(const Tensor& src, Tensor& dst) {
  RT_CHECK(src.numel() == dst.numel(), "cast: ", src.describe(), " into ", dst.describe());
  launch_pair<kernels::Cast>("cast", src, dst, compute_);
}

void CudaBackend::accumulate(Tensor& src, Tensor& dst) {
  RT_CHECK(src.numel() == dst.numel() && src.raw() != dst.raw(), "accumulate: ", src.describe(),
           " into ", dst.describe());
  launch_pair<kernels::AccumulateAndClear>("accumulate", src, dst, compute_);
}

void CudaBackend::synchronize() {
  RT_CUDA_CHECK(cudaStreamSynchronize(compute_));
}

void CudaBackend::bind_thread() {
  set_error_context(options_.rank, options_.device);
  RT_CUDA_CHECK(cudaSetDevice(options_.device));
}

int64_t CudaBackend::mark(const char* label) {
  RT_CHECK(!capture_, "mark: a profiler mark inside a captured step is never recorded");
  if (nvtx_open_) nvtxRangePop();
  nvtx_open_ = label != nullptr;
  if (label) nvtxRangePushA(label);
  cudaEvent_t e = nullptr;
  if (free_marks_.empty()) {
    RT_CUDA_CHECK(cudaEventCreate(&e));
  } else {
    e = free_marks_.back();
    free_marks_.pop_back();
  }
  const int64_t id = marks_.push(e);
  RT_CUDA_CHECK(cudaEventRecord(e, compute_));
  return id;
}

double CudaBackend::seconds_between(int64_t from, int64_t to) {
  const cudaEvent_t start = marks_.at(from, "seconds_between"),
                    end = marks_.at(to, "seconds_between");
  RT_CUDA_CHECK(cudaEventSynchronize(end));
  float ms = 0;
  RT_CUDA_CHECK(cudaEventElapsedTime(&ms, start, end));
  return ms * 1e-3;
}

void CudaBackend::release_marks(int64_t before) {
  marks_.release_before(before, [this](cudaEvent_t e) { free_marks_.push_back(e); });
}

std::shared_ptr<void> CudaBackend::host_buffer(std::size_t bytes) {
  void* p = nullptr;
  RT_CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
  return std::shared_ptr<void>(p, [](void* q) { warn_on_error(cudaFreeHost(q), "cudaFreeHost"); });
}

void CudaBackend::copy_to_device_async(const Tensor& host, Tensor& dev) {
  RT_CHECK(host.device().kind == DeviceKind::cpu && host.nbytes() == dev.nbytes() &&
               host.dtype() == dev.dtype() && (host.layout() == dev.layout() || host.rank() != 4),
           "copy_to_device_async: ", host.describe(), " into ", dev.describe());
  check_on_device("copy_to_device_async", dev);
  RT_CUDA_CHECK(cudaEventRecord(compute_mark_, compute_));
  RT_CUDA_CHECK(cudaStreamWaitEvent(copy_, compute_mark_, 0));
  RT_CUDA_CHECK(
      cudaMemcpyAsync(dev.raw(), host.raw(), host.nbytes(), cudaMemcpyHostToDevice, copy_));
  RT_CUDA_CHECK(cudaEventRecord(copies_done_, copy_));
}

void CudaBackend::wait_for_copies() {
  RT_CUDA_CHECK(cudaEventSynchronize(copies_done_));
  RT_CUDA_CHECK(cudaStreamWaitEvent(compute_, copies_done_, 0));
}

void CudaBackend::check_on_device(const char* op, const Tensor& t) const {
  RT_CHECK(t.device() == device_id(), op, ": tensor ", t.describe(), " is not on ",
           device_id().str());
}

template <class T>
T CudaBackend::read_scalar(const T* device_value) {
  static_assert(sizeof(T) <= sizeof(double), "read_scalar: the pinned slot holds 8 bytes");
  RT_CUDA_CHECK(
      cudaMemcpyAsync(host_scalar_, device_value, sizeof(T), cudaMemcpyDeviceToHost, compute_));
  RT_CUDA_CHECK(cudaStreamSynchronize(compute_));
  count_value_read();
  T value;
  std::memcpy(&value, host_scalar_, sizeof(T));
  return value;
}
template double CudaBackend::read_scalar<double>(const double*);
template int CudaBackend::read_scalar<int>(const int*);

}  // namespace ringtrain::cuda

namespace ringtrain {

std::unique_ptr<Backend> make_cuda_backend(const CudaOptions& options) {
  return std::make_unique<cuda::CudaBackend>(options);
}

void* compute_stream(Device& device) {
  auto* cuda = dynamic_cast<cuda::CudaBackend*>(&device);
  RT_CHECK(cuda, "compute_stream: backend ", device.name(), " is not a CUDA backend");
  return cuda->stream();
}

}  // namespace ringtrain
