// Convolutions through cuDNN in NHWC (filters KRSC), accumulating in f32. The algorithm of each
// pass is searched for once per geometry and dtype (cudnnFind*), chosen by pick_conv_algo under
// the workspace limit, and cached.
#include "backend_impl.hpp"
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

  ConvDescriptors(const ConvGeometry& g, DType dtype) {
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
    // f32 stays true f32 (no TF32), so that it matches the CPU reference.
    RT_CUDA_CHECK(cudnnSetConvolutionMathType(
        conv, dtype == DType::f32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));
  }
  ~ConvDescriptors() {
    cudnnDestroyConvolutionDescriptor(conv);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyTensorDescriptor(x);
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

// alpha and beta: kZero overwrites the output (data gradients, activations), kOne adds to it
// (weight gradients accumulate, see Ops::conv_backward_filter).
constexpr float kOne = 1.f, kZero = 0.f;

}  // namespace

ConvChoice CudaBackend::conv_algo(const ConvKey& key, const ConvDescriptors& d) {
  const auto cached = algos_.find(key);
  if (cached != algos_.end()) return cached->second;
  int count = 0;
  std::vector<ConvCandidate> found;
  switch (key.pass) {
    case ConvPass::forward: {
      cudnnConvolutionFwdAlgoPerf_t perf[kMaxAlgos];
      RT_CUDA_CHECK(cudnnFindConvolutionForwardAlgorithm(cudnn_, d.x, d.w, d.conv, d.y, kMaxAlgos,
                                                         &count, perf));
      found = candidates(perf, count, key.dtype);
      break;
    }
    case ConvPass::backward_data: {
      cudnnConvolutionBwdDataAlgoPerf_t perf[kMaxAlgos];
      RT_CUDA_CHECK(cudnnFindConvolutionBackwardDataAlgorithm(cudnn_, d.w, d.y, d.conv, d.x,
                                                              kMaxAlgos, &count, perf));
      found = candidates(perf, count, key.dtype);
      break;
    }
    case ConvPass::backward_filter: {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[kMaxAlgos];
      RT_CUDA_CHECK(cudnnFindConvolutionBackwardFilterAlgorithm(cudnn_, d.x, d.y, d.conv, d.w,
                                                                kMaxAlgos, &count, perf));
      found = candidates(perf, count, key.dtype);
      break;
    }
  }
  const std::size_t limit = options_.workspace_mb << 20;
  const std::optional<ConvChoice> choice = pick_conv_algo(found, limit, options_.deterministic);
  RT_CHECK(choice, "cuDNN: no ", options_.deterministic ? "deterministic " : "",
           "algorithm for convolution ", key.g.str(), " in ", dtype_name(key.dtype), " (", count,
           " tried)");
  algos_.emplace(key, *choice);
  return *choice;
}

ConvChoice CudaBackend::prepare_conv(ConvPass pass, const ConvGeometry& g, const Tensor& x,
                                     const Tensor& w, const Tensor& y, const ConvDescriptors& d) {
  const char* op = conv_pass_name(pass);
  check_conv(pass, g, x, w, y);
  check_dtype(op, {&w, &y}, x.dtype());
  for (const Tensor* t : {&x, &w, &y})
    RT_CHECK(t->layout() == Layout::nhwc, op, ": expected nhwc operands, got ", t->describe());
  const ConvChoice c = conv_algo({g, x.dtype(), pass}, d);
  RT_CUDA_CHECK(cudnnSetConvolutionMathType(d.conv, static_cast<cudnnMathType_t>(c.math_type)));
  return c;
}

void CudaBackend::conv_forward(const ConvGeometry& g, const Tensor& x, const Tensor& w, Tensor& y) {
  const ConvDescriptors d(g, x.dtype());
  const ConvChoice c = prepare_conv(ConvPass::forward, g, x, w, y, d);
  RT_CUDA_CHECK(cudnnConvolutionForward(cudnn_, &kOne, d.x, x.raw(), d.w, w.raw(), d.conv,
                                        static_cast<cudnnConvolutionFwdAlgo_t>(c.algo),
                                        workspace(c.workspace), c.workspace, &kZero, d.y, y.raw()));
}

void CudaBackend::conv_backward_data(const ConvGeometry& g, const Tensor& dy, const Tensor& w,
                                     Tensor& dx) {
  const ConvDescriptors d(g, dy.dtype());
  const ConvChoice c = prepare_conv(ConvPass::backward_data, g, dx, w, dy, d);
  RT_CUDA_CHECK(cudnnConvolutionBackwardData(cudnn_, &kOne, d.w, w.raw(), d.y, dy.raw(), d.conv,
                                             static_cast<cudnnConvolutionBwdDataAlgo_t>(c.algo),
                                             workspace(c.workspace), c.workspace, &kZero, d.x,
                                             dx.raw()));
}

void CudaBackend::conv_backward_filter(const ConvGeometry& g, const Tensor& x, const Tensor& dy,
                                       Tensor& dw) {
  const ConvDescriptors d(g, x.dtype());
  const ConvChoice c = prepare_conv(ConvPass::backward_filter, g, x, dw, dy, d);
  RT_CUDA_CHECK(cudnnConvolutionBackwardFilter(cudnn_, &kOne, d.x, x.raw(), d.y, dy.raw(), d.conv,
                                               static_cast<cudnnConvolutionBwdFilterAlgo_t>(c.algo),
                                               workspace(c.workspace), c.workspace, &kOne, d.w,
                                               dw.raw()));
}

}  // namespace ringtrain::cuda
