// cudnn_probe: for every distinct convolution of ResNet-18 and ResNet-50 (cifar stem, 32x32
// images, batch 256), in f32 and bf16, NHWC and NCHW, asks cuDNN's heuristics
// (cudnnGet*Algorithm_v7) which forward, backward-data and backward-filter algorithms it has, and
// prints one line per (shape, dtype, layout, pass): the algorithms that cuDNN can run, or NONE.
// With --find, each NHWC query is also asked as the backend asks it, by measuring
// (cudnnFind*Algorithm), and a second line, marked "find", gives what ran, fastest first, with
// its time; the exit status then follows the measured answers.
// The descriptors are set up as the CUDA backend sets them (f32 accumulation; f32 in FMA math,
// no TF32; bf16 in tensor-op math). Exit status: 0 when every NHWC query (the layout ringtrain
// runs) has an algorithm, at its own channel count or zero-padded as the backend pads (then the
// padded counts' lines follow, marked "padded"), 1 when one has none, 2 on an error.
//   cudnn_probe              # the table, then "cudnn_probe: Q queries, M NONE (K in NHWC)"
//   cudnn_probe --find       # the same, each NHWC query measured too
//   cudnn_probe --versions   # driver, runtime, cuDNN, cuBLAS and NCCL versions, and the device
#include <nccl.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ringtrain/backend/cuda/conv_algo.hpp"
#include "ringtrain/backend/cuda/cuda_check.hpp"
#include "ringtrain/nn/resnet.hpp"

namespace {

using namespace ringtrain;

constexpr int kBatch = 256;
constexpr int kSide = 32;
constexpr int kMaxAlgos = 16;

// One distinct convolution and the models it occurs in.
struct ProbeShape {
  ConvGeometry g;
  std::string models;
};

bool same_geometry(const ConvGeometry& a, const ConvGeometry& b) {
  return a.n == b.n && a.c == b.c && a.h == b.h && a.w == b.w && a.k == b.k && a.r == b.r &&
         a.s == b.s && a.stride == b.stride && a.pad == b.pad;
}

ConvGeometry square_conv(int c, int side, int k, int kernel, int stride) {
  return ConvGeometry{kBatch, c, side, side, k, kernel, kernel, stride, kernel / 2};
}

void add_shape(std::vector<ProbeShape>& shapes, const ConvGeometry& g, const std::string& model) {
  for (ProbeShape& s : shapes) {
    if (!same_geometry(s.g, g)) continue;
    if (s.models.find(model) == std::string::npos) s.models += "," + model;
    return;
  }
  shapes.push_back({g, model});
}

// Note: follows the constructors of ResNet and ResidualBlock (cifar stem, width 1): a change
// there needs the same change here.
void add_resnet(std::vector<ProbeShape>& shapes, int depth) {
  const ResNetLayout layout = resnet_layout(depth);
  const std::string model = str_cat("resnet", depth);
  int channels = 64, side = kSide;
  add_shape(shapes, square_conv(3, side, channels, 3, 1), model);
  for (size_t stage = 0; stage < layout.blocks.size(); ++stage) {
    const int planes = 64 << stage;
    const int out_channels = layout.bottleneck ? 4 * planes : planes;
    for (int b = 0; b < layout.blocks[stage]; ++b) {
      const int stride = (stage > 0 && b == 0) ? 2 : 1;
      const int out_side = square_conv(channels, side, planes, 3, stride).p();
      if (layout.bottleneck) {
        add_shape(shapes, square_conv(channels, side, planes, 1, 1), model);
        add_shape(shapes, square_conv(planes, side, planes, 3, stride), model);
        add_shape(shapes, square_conv(planes, out_side, out_channels, 1, 1), model);
      } else {
        add_shape(shapes, square_conv(channels, side, planes, 3, stride), model);
        add_shape(shapes, square_conv(planes, out_side, planes, 3, 1), model);
      }
      if (stride != 1 || channels != out_channels)
        add_shape(shapes, square_conv(channels, side, out_channels, 1, stride), model);
      channels = out_channels;
      side = out_side;
    }
  }
}

// The descriptors of one convolution in one dtype and layout, destroyed with it.
struct Descriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;

  Descriptors(const ConvGeometry& g, cudnnDataType_t t, cudnnTensorFormat_t format) {
    RT_CUDA_CHECK(cudnnCreateTensorDescriptor(&x));
    RT_CUDA_CHECK(cudnnCreateTensorDescriptor(&y));
    RT_CUDA_CHECK(cudnnCreateFilterDescriptor(&w));
    RT_CUDA_CHECK(cudnnCreateConvolutionDescriptor(&conv));
    RT_CUDA_CHECK(cudnnSetTensor4dDescriptor(x, format, t, g.n, g.c, g.h, g.w));
    RT_CUDA_CHECK(cudnnSetTensor4dDescriptor(y, format, t, g.n, g.k, g.p(), g.q()));
    RT_CUDA_CHECK(cudnnSetFilter4dDescriptor(w, t, format, g.k, g.c, g.r, g.s));
    RT_CUDA_CHECK(cudnnSetConvolution2dDescriptor(conv, g.pad, g.pad, g.stride, g.stride, 1, 1,
                                                  CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    RT_CUDA_CHECK(cudnnSetConvolutionMathType(
        conv, t == CUDNN_DATA_FLOAT ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));
  }
  ~Descriptors() {
    cudnnDestroyConvolutionDescriptor(conv);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyTensorDescriptor(x);
  }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
};

const char* const kForwardNames[] = {
    "IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING",
    "WINOGRAD",      "WINOGRAD_NONFUSED"};
const char* const kDataNames[] = {"ALGO_0",     "ALGO_1",   "FFT",
                                  "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
const char* const kFilterNames[] = {"ALGO_0",    "ALGO_1", "FFT", "ALGO_3", "WINOGRAD_NONFUSED",
                                    "FFT_TILING"};

template <size_t N>
std::string algo_name(const char* const (&names)[N], int algo) {
  return algo >= 0 && static_cast<size_t>(algo) < N ? names[algo] : str_cat("algo", algo);
}

// How a query asks cuDNN: its heuristics, or measuring every algorithm (the backend's way).
enum class Method { heuristic, find };

// The algorithms cuDNN can run, as "NAME(math, workspace MiB)" (measured: "NAME(math, workspace
// MiB, time ms)"), or "NONE".
template <class Perf, size_t N>
std::string usable(const Perf* perf, int count, const char* const (&names)[N], Method method) {
  std::string out;
  for (int i = 0; i < count; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
    const char* math = perf[i].mathType == CUDNN_TENSOR_OP_MATH ? "tensor-op" : "fma";
    out += str_cat(out.empty() ? "" : " ", algo_name(names, static_cast<int>(perf[i].algo)), "(",
                   math, ", ", perf[i].memory >> 20, " MiB");
    out += method == Method::find ? str_cat(", ", perf[i].time, " ms)") : ")";
  }
  return out.empty() ? "NONE" : out;
}

// Note: as in the backend, a query that cuDNN refuses as a whole (NOT_SUPPORTED, or BAD_PARAM
// for some NHWC channel counts) means no algorithm, not an error.
std::string answer(cudnnStatus_t status, const char* call, const std::string& found) {
  if (status == CUDNN_STATUS_NOT_SUPPORTED || status == CUDNN_STATUS_BAD_PARAM)
    return str_cat("NONE (", cudnnGetErrorString(status), ")");
  ringtrain::cuda::check(status, call);
  return found;
}

std::string query(cudnnHandle_t h, const Descriptors& d, ConvPass pass, Method method) {
  int count = 0;
  const bool find = method == Method::find;
  cudnnStatus_t status;
  switch (pass) {
    case ConvPass::forward: {
      cudnnConvolutionFwdAlgoPerf_t perf[kMaxAlgos];
      status = find ? cudnnFindConvolutionForwardAlgorithm(h, d.x, d.w, d.conv, d.y, kMaxAlgos,
                                                           &count, perf)
                    : cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y, kMaxAlgos,
                                                             &count, perf);
      return answer(status, "cudnn*ConvolutionForwardAlgorithm",
                    usable(perf, count, kForwardNames, method));
    }
    case ConvPass::backward_data: {
      cudnnConvolutionBwdDataAlgoPerf_t perf[kMaxAlgos];
      status = find ? cudnnFindConvolutionBackwardDataAlgorithm(h, d.w, d.y, d.conv, d.x, kMaxAlgos,
                                                                &count, perf)
                    : cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w, d.y, d.conv, d.x,
                                                                  kMaxAlgos, &count, perf);
      return answer(status, "cudnn*ConvolutionBackwardDataAlgorithm",
                    usable(perf, count, kDataNames, method));
    }
    case ConvPass::backward_filter: {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[kMaxAlgos];
      status = find ? cudnnFindConvolutionBackwardFilterAlgorithm(h, d.x, d.y, d.conv, d.w,
                                                                  kMaxAlgos, &count, perf)
                    : cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, d.conv, d.w,
                                                                    kMaxAlgos, &count, perf);
      return answer(status, "cudnn*ConvolutionBackwardFilterAlgorithm",
                    usable(perf, count, kFilterNames, method));
    }
  }
  return "NONE";
}

const char* pass_name(ConvPass pass) {
  switch (pass) {
    case ConvPass::forward:
      return "forward";
    case ConvPass::backward_data:
      return "backward-data";
    case ConvPass::backward_filter:
      return "backward-filter";
  }
  return "?";
}

void print_versions() {
  int driver = 0, runtime = 0, nccl = 0, cublas_major = 0, cublas_minor = 0, devices = 0;
  RT_CUDA_CHECK(cudaDriverGetVersion(&driver));
  RT_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  RT_CUDA_CHECK(cublasGetProperty(MAJOR_VERSION, &cublas_major));
  RT_CUDA_CHECK(cublasGetProperty(MINOR_VERSION, &cublas_minor));
  const ncclResult_t got = ncclGetVersion(&nccl);
  RT_CHECK(got == ncclSuccess, "ncclGetVersion: ", ncclGetErrorString(got));
  std::printf("CUDA driver API %d, runtime %d (the probe's, static)\n", driver, runtime);
  std::printf("cuDNN %zu (built against %d), for CUDA runtime %zu\n", cudnnGetVersion(),
              CUDNN_VERSION, cudnnGetCudartVersion());
  std::printf("cuBLAS %d.%d, NCCL %d\n", cublas_major, cublas_minor, nccl);
  RT_CUDA_CHECK(cudaGetDeviceCount(&devices));
  for (int i = 0; i < devices; ++i) {
    cudaDeviceProp p{};
    RT_CUDA_CHECK(cudaGetDeviceProperties(&p, i));
    std::printf("device %d: %s, sm_%d%d, %.1f GiB\n", i, p.name, p.major, p.minor,
                p.totalGlobalMem / double(1 << 30));
  }
}

// One line of the table; true when cuDNN has no algorithm for it.
bool probe_line(cudnnHandle_t handle, const ProbeShape& s, cudnnDataType_t t,
                cudnnTensorFormat_t format, ConvPass pass, Method method);

// An NHWC query without an algorithm runs in the backend with its input channels zero-padded
// (channels_to_try); true when no padded count has one either.
bool none_even_padded(cudnnHandle_t handle, const ProbeShape& s, cudnnDataType_t t, ConvPass pass,
                      Method method) {
  const std::vector<int> channels = channels_to_try(s.g.c);
  return !first_supported(std::vector<int>(channels.begin() + 1, channels.end()), [&](int c) {
    ProbeShape padded = s;
    padded.g.c = c;
    padded.models += ",padded";
    return !probe_line(handle, padded, t, CUDNN_TENSOR_NHWC, pass, method);
  });
}

bool probe_line(cudnnHandle_t handle, const ProbeShape& s, cudnnDataType_t t,
                cudnnTensorFormat_t format, ConvPass pass, Method method) {
  const char* dtype = t == CUDNN_DATA_FLOAT ? "f32" : "bf16";
  const char* layout = format == CUDNN_TENSOR_NHWC ? "nhwc" : "nchw";
  std::string found;
  try {
    const Descriptors d(s.g, t, format);
    found = query(handle, d, pass, method);
  } catch (const std::exception& e) {
    throw Error(str_cat(s.g.str(), " ", dtype, " ", layout, " ", pass_name(pass), ": ", e.what()));
  }
  std::printf("%s [%s] %s %s %s%s: %s\n", s.g.str().c_str(), s.models.c_str(), dtype, layout,
              pass_name(pass), method == Method::find ? " find" : "", found.c_str());
  return found.rfind("NONE", 0) == 0;
}

// Prints the table; returns the exit status.
int probe_all(bool find) {
  std::vector<ProbeShape> shapes;
  add_resnet(shapes, 18);
  add_resnet(shapes, 50);
  cudnnHandle_t handle = nullptr;
  RT_CUDA_CHECK(cudnnCreate(&handle));
  int queries = 0, none = 0, none_nhwc = 0;
  for (const ProbeShape& s : shapes)
    for (const cudnnDataType_t t : {CUDNN_DATA_FLOAT, CUDNN_DATA_BFLOAT16})
      for (const cudnnTensorFormat_t format : {CUDNN_TENSOR_NHWC, CUDNN_TENSOR_NCHW})
        for (const ConvPass pass :
             {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_filter}) {
          ++queries;
          const Method method =
              find && format == CUDNN_TENSOR_NHWC ? Method::find : Method::heuristic;
          if (method == Method::find) probe_line(handle, s, t, format, pass, Method::heuristic);
          if (!probe_line(handle, s, t, format, pass, method)) continue;
          ++none;
          if (format == CUDNN_TENSOR_NHWC && none_even_padded(handle, s, t, pass, method))
            ++none_nhwc;
        }
  RT_CUDA_CHECK(cudnnDestroy(handle));
  std::printf("cudnn_probe: %zu shapes, %d queries, %d NONE (%d in NHWC even zero-padded)\n",
              shapes.size(), queries, none, none_nhwc);
  return none_nhwc > 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const bool versions = argc == 2 && std::strcmp(argv[1], "--versions") == 0;
  const bool find = argc == 2 && std::strcmp(argv[1], "--find") == 0;
  if (argc > 2 || (argc == 2 && !versions && !find)) {
    std::fprintf(stderr, "usage: cudnn_probe [--versions | --find]\n");
    return 2;
  }
  try {
    if (versions) {
      print_versions();
      return 0;
    }
    return probe_all(find);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cudnn_probe: error: %s\n", e.what());
    return 2;
  }
}
