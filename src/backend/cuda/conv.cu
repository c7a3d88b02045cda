// Convolutions through cuDNN in NHWC (filters KRSC), accumulating in f32. The algorithm of each
// pass is searched for once per geometry and dtype (cudnnFind*, or the heuristics in
// deterministic mode), chosen by pick_conv_algo under the workspace limit, and cached: in the
// process, and in the conv algorithm cache file for the processes after it. A
// convolution whose input channels have no algorithm runs with them zero-padded.
#include "backend_impl.hpp"
#include "launch.cuh"
#include "ringtrain/backend/kernels/channels.hpp"
#include "ringtrain/backend/op_checks.hpp"

namespace ringtrain::cuda {

cudnnDataType_t cudnn_dtype(DType t) {
  switch (t) {
    case DType::f32:
      return CUDNN_DATA_FLOAT;
    case DType::bf16:
      return CUDNN_DATA_BFLOAT16;
    case DType::f16:
      return CUDNN_DATA_HALF;
    default:
      throw Error(str_cat("cuDNN: no data type for ", dtype_name(t)));
  }
}

// The descriptors of one convolution, destroyed with it.
struct ConvDescriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;

  // math: a cudnnMathType_t; by default f32 stays true f32 (no TF32), so that it matches the CPU
  // reference, and bf16/f16 use tensor ops.
  ConvDescriptors(const ConvGeometry& g, DType dtype, int math = -1) {
    const cudnnDataType_t t = cudnn_dtype(dtype);
    RT_CUDA_CHECK(cudnnCreateTensorDescriptor(&x));
    RT_CUDA_CHECK(cudnnCreateTensorDescriptor(&y));
    RT_CUDA_CHECK(cudnnCreateFilterDescriptor(&w));
    RT_CUDA_CHECK(cudnnCreateConvolutionDescriptor(&conv));
    RT_CUDA_CHECK(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NHWC, t, g.n, g.c, g.h, g.w));
    RT_CUDA_CHECK(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NHWC, t, g.n, g.k, g.p(), g.q()));
    RT_CUDA_CHECK(cudnnSetFilter4dDescriptor(w, t, CUDNN_TENSOR_NHWC, g.k, g.c, g.r, g.s));
    RT_CUDA_CHECK(cudnnSetConvolution2dDescriptor(conv, g.pad, g.pad, g.stride, g.stride, 1, 1,
                                                  CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    const cudnnMathType_t type = math >= 0             ? static_cast<cudnnMathType_t>(math)
                                 : dtype == DType::f32 ? CUDNN_FMA_MATH
                                                       : CUDNN_TENSOR_OP_MATH;
    RT_CUDA_CHECK(cudnnSetConvolutionMathType(conv, type));
  }
  ~ConvDescriptors() {
    warn_on_error(cudnnDestroyConvolutionDescriptor(conv), "cudnnDestroyConvolutionDescriptor");
    warn_on_error(cudnnDestroyFilterDescriptor(w), "cudnnDestroyFilterDescriptor");
    warn_on_error(cudnnDestroyTensorDescriptor(y), "cudnnDestroyTensorDescriptor(y)");
    warn_on_error(cudnnDestroyTensorDescriptor(x), "cudnnDestroyTensorDescriptor(x)");
  }
  ConvDescriptors(const ConvDescriptors&) = delete;
  ConvDescriptors& operator=(const ConvDescriptors&) = delete;
};

namespace {

constexpr int kMaxAlgos = 16;

// The three perf structs of cuDNN share these fields. The search ran under the descriptor's
// math type, so f32 candidates are FMA kernels; they keep running as such.
template <class Perf>
std::vector<ConvCandidate> candidates(const Perf* perf, int count, DType dtype) {
  std::vector<ConvCandidate> out;
  for (int i = 0; i < count; ++i) {
    const int math = dtype == DType::f32 ? CUDNN_FMA_MATH : static_cast<int>(perf[i].mathType);
    out.push_back({static_cast<int>(perf[i].algo), math, perf[i].status == CUDNN_STATUS_SUCCESS,
                   perf[i].time, perf[i].memory, perf[i].determinism == CUDNN_DETERMINISTIC});
  }
  return out;
}

ConvGeometry with_channels(ConvGeometry g, int channels) {
  g.c = channels;
  return g;
}

// alpha and beta: kZero overwrites the output (data gradients, activations), kOne adds to it
// (weight gradients accumulate, see Ops::conv_backward_filter).
constexpr float kOne = 1.f, kZero = 0.f;

}  // namespace

// cuDNN's candidates for one pass over g: measured (cudnnFind*), or in deterministic mode its
// heuristics' ranking (cudnnGet*_v7), which no timing noise can reorder. A search that cuDNN
// refuses as a whole (not supported) has no candidates.
std::vector<ConvCandidate> CudaBackend::conv_candidates(ConvPass pass, const ConvGeometry& g,
                                                        DType dtype) {
  const ConvDescriptors d(g, dtype);
  const bool heuristic = options_.deterministic;
  int count = 0;
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  std::vector<ConvCandidate> found;
  switch (pass) {
    case ConvPass::forward: {
      cudnnConvolutionFwdAlgoPerf_t perf[kMaxAlgos];
      status = heuristic ? cudnnGetConvolutionForwardAlgorithm_v7(cudnn_, d.x, d.w, d.conv, d.y,
                                                                  kMaxAlgos, &count, perf)
                         : cudnnFindConvolutionForwardAlgorithm(cudnn_, d.x, d.w, d.conv, d.y,
                                                                kMaxAlgos, &count, perf);
      found = candidates(perf, count, dtype);
      break;
    }
    case ConvPass::backward_data: {
      cudnnConvolutionBwdDataAlgoPerf_t perf[kMaxAlgos];
      status = heuristic ? cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnn_, d.w, d.y, d.conv,
                                                                       d.x, kMaxAlgos, &count, perf)
                         : cudnnFindConvolutionBackwardDataAlgorithm(cudnn_, d.w, d.y, d.conv, d.x,
                                                                     kMaxAlgos, &count, perf);
      found = candidates(perf, count, dtype);
      break;
    }
    case ConvPass::backward_filter: {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[kMaxAlgos];
      status = heuristic ? cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                               cudnn_, d.x, d.y, d.conv, d.w, kMaxAlgos, &count, perf)
                         : cudnnFindConvolutionBackwardFilterAlgorithm(
                               cudnn_, d.x, d.y, d.conv, d.w, kMaxAlgos, &count, perf);
      found = candidates(perf, count, dtype);
      break;
    }
  }
  // Note: cuDNN 9 refuses some NHWC geometries (3 input channels in bf16, say) with BAD_PARAM
  // rather than NOT_SUPPORTED; either means "no algorithm here", and the caller pads.
  if (status == CUDNN_STATUS_NOT_SUPPORTED || status == CUDNN_STATUS_BAD_PARAM) return {};
  check(status, heuristic ? "cudnnGetConvolution*Algorithm_v7" : "cudnnFindConvolution*Algorithm");
  return found;
}

// Note: the measured search (cudnnFind*) runs every algorithm of the pass, about 70 searches
// for a ResNet-50, seconds of every process's start-up; the file of options_.conv_algo_cache
// keeps them for the next process on the same GPU model and cuDNN. The heuristic choice of
// deterministic mode is cheap and is not kept.
ConvChoice CudaBackend::conv_algo(const ConvKey& key) {
  const auto cached = algos_.find(key);
  if (cached != algos_.end()) return cached->second;
  const std::size_t limit = options_.workspace_mb << 20;
  const auto search = [&]() -> std::optional<ConvChoice> {
    std::optional<ConvChoice> choice;
    std::vector<int> tried = channels_to_try(key.g.c);
    if (options_.force_padded_channels && tried.size() > 1) tried.erase(tried.begin());
    const std::optional<int> channels = first_supported(tried, [&](int c) {
      choice = pick_conv_algo(conv_candidates(key.pass, with_channels(key.g, c), key.dtype), limit,
                              options_.deterministic);
      return choice.has_value();
    });
    if (choice) choice->channels = *channels;
    return choice;
  };
  const std::optional<ConvChoice> choice =
      options_.deterministic ? search() : find_or_search(algo_file_.get(), key, limit, search);
  RT_CHECK(choice, "cuDNN: no ", options_.deterministic ? "deterministic " : "",
           conv_pass_name(key.pass), " algorithm for convolution ", key.g.str(), " in ",
           dtype_name(key.dtype), ", even with the input channels zero-padded to 4 or 8",
           options_.deterministic ? "; run without --deterministic" : "");
  algos_.emplace(key, *choice);
  return *choice;
}

// Note: cuDNN's descriptors are host objects that describe a shape, so each convolution's are
// built on its first call and kept with the backend: built per call, they were 2,054 cuDNN
// calls of host time in every ResNet-50 step.
const ConvDescriptors& CudaBackend::conv_descriptors(const ConvGeometry& g, DType dtype, int math) {
  const ConvDescriptorKey key{ConvKey{g, dtype, ConvPass::forward}, math};
  auto found = conv_descriptors_.find(key);
  if (found == conv_descriptors_.end())
    found = conv_descriptors_.emplace(key, std::make_shared<const ConvDescriptors>(g, dtype, math))
                .first;
  return *found->second;
}

ConvChoice CudaBackend::prepare_conv(ConvPass pass, const ConvGeometry& g, const Tensor& x,
                                     const Tensor& w, const Tensor& y) {
  const char* op = conv_pass_name(pass);
  check_conv(pass, g, x, w, y);
  check_dtype(op, {&w, &y}, x.dtype());
  for (const Tensor* t : {&x, &w, &y})
    RT_CHECK(t->layout() == Layout::nhwc, op, ": expected nhwc operands, got ", t->describe());
  return conv_algo({g, x.dtype(), pass});
}

Tensor CudaBackend::pad_channels(const Tensor& t, int channels) {
  const int narrow = static_cast<int>(t.dim(1));
  if (channels == narrow) return t;
  Tensor wide = scratch({t.dim(0), channels, t.dim(2), t.dim(3)}, t.dtype());
  dispatch_float("pad_channels", t, [&](auto tag) {
    using T = decltype(tag);
    const kernels::PadChannels<T> body{static_cast<const T*>(t.raw()), static_cast<T*>(wide.raw()),
                                       narrow, channels};
    launch_grid_stride("pad_channels", body, wide.numel(), compute_);
  });
  return wide;
}

void CudaBackend::drop_channels(const Tensor& wide, Tensor& t, bool accumulate) {
  dispatch_float("drop_channels", t, [&](auto tag) {
    using T = decltype(tag);
    const kernels::DropChannels<T> body{static_cast<const T*>(wide.raw()), static_cast<T*>(t.raw()),
                                        static_cast<int>(t.dim(1)), static_cast<int>(wide.dim(1)),
                                        accumulate};
    launch_grid_stride("drop_channels", body, t.numel(), compute_);
  });
}

void CudaBackend::conv_forward(const ConvGeometry& g, const Tensor& x, const Tensor& w, Tensor& y) {
  const ConvChoice c = prepare_conv(ConvPass::forward, g, x, w, y);
  const ConvDescriptors& d = conv_descriptors(with_channels(g, c.channels), x.dtype(), c.math_type);
  const Tensor xp = pad_channels(x, c.channels), wp = pad_channels(w, c.channels);
  RT_CUDA_CHECK(cudnnConvolutionForward(cudnn_, &kOne, d.x, xp.raw(), d.w, wp.raw(), d.conv,
                                        static_cast<cudnnConvolutionFwdAlgo_t>(c.algo),
                                        workspace(c.workspace), c.workspace, &kZero, d.y, y.raw()));
}

void CudaBackend::conv_backward_data(const ConvGeometry& g, const Tensor& dy, const Tensor& w,
                                     Tensor& dx) {
  const ConvChoice c = prepare_conv(ConvPass::backward_data, g, dx, w, dy);
  const ConvDescriptors& d =
      conv_descriptors(with_channels(g, c.channels), dy.dtype(), c.math_type);
  const Tensor wp = pad_channels(w, c.channels);
  Tensor dxp = c.channels == g.c ? dx : scratch({g.n, c.channels, g.h, g.w}, dx.dtype());
  RT_CUDA_CHECK(cudnnConvolutionBackwardData(cudnn_, &kOne, d.w, wp.raw(), d.y, dy.raw(), d.conv,
                                             static_cast<cudnnConvolutionBwdDataAlgo_t>(c.algo),
                                             workspace(c.workspace), c.workspace, &kZero, d.x,
                                             dxp.raw()));
  if (c.channels != g.c) drop_channels(dxp, dx, false);
}

// Note: the filter gradient accumulates (beta = 1, see Ops::conv_backward_filter); a padded run
// writes its wide gradient to scratch and adds the real channels to dw.
void CudaBackend::conv_backward_filter(const ConvGeometry& g, const Tensor& x, const Tensor& dy,
                                       Tensor& dw) {
  const ConvChoice c = prepare_conv(ConvPass::backward_filter, g, x, dw, dy);
  const ConvDescriptors& d = conv_descriptors(with_channels(g, c.channels), x.dtype(), c.math_type);
  const bool padded = c.channels != g.c;
  const Tensor xp = pad_channels(x, c.channels);
  Tensor dwp = padded ? scratch({g.k, c.channels, g.r, g.s}, dw.dtype()) : dw;
  RT_CUDA_CHECK(cudnnConvolutionBackwardFilter(cudnn_, &kOne, d.x, xp.raw(), d.y, dy.raw(), d.conv,
                                               static_cast<cudnnConvolutionBwdFilterAlgo_t>(c.algo),
                                               workspace(c.workspace), c.workspace,
                                               padded ? &kZero : &kOne, d.w, dwp.raw()));
  if (padded) drop_channels(dwp, dw, true);
}

}  // namespace ringtrain::cuda
