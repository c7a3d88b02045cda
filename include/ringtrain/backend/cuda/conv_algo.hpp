#pragma once
// Host-side choice of a cuDNN convolution algorithm, kept free of CUDA types so that it is
// unit-tested without a GPU.
#include <cstddef>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "ringtrain/backend/geometry.hpp"
#include "ringtrain/core/dtype.hpp"

namespace ringtrain {

// What the algorithm search is done once for: a pass over one geometry in one dtype.
struct ConvKey {
  ConvGeometry g;
  DType dtype = DType::f32;
  ConvPass pass = ConvPass::forward;
  bool operator<(const ConvKey& o) const {
    return std::tie(g.n, g.c, g.h, g.w, g.k, g.r, g.s, g.stride, g.pad, dtype, pass) <
           std::tie(o.g.n, o.g.c, o.g.h, o.g.w, o.g.k, o.g.r, o.g.s, o.g.stride, o.g.pad, o.dtype,
                    o.pass);
  }
};

// One result of cuDNN's search, in the order cuDNN ranks them: by measured time (cudnnFind*),
// or by its heuristics (cudnnGet*_v7, deterministic mode).
struct ConvCandidate {
  int algo = 0;
  int math_type = 0;
  bool ok = false;  // status CUDNN_STATUS_SUCCESS
  float time_ms = 0;
  std::size_t workspace = 0;
  bool deterministic = false;
};

struct ConvChoice {
  int algo = 0;
  int math_type = 0;
  std::size_t workspace = 0;
  int channels = 0;   // the input channels it runs with: the convolution's own, or zero-padded
  float time_ms = 0;  // what cuDNN measured for it (0 when chosen by heuristics)
};

// The fastest candidate that succeeded and fits the workspace limit. Deterministic: the first
// deterministic one in cuDNN's heuristic order that fits, whatever the timings say, so every
// process and every run picks the same algorithm. When none fits the limit, the one with the
// smallest workspace (a slow convolution beats none); nothing when no candidate succeeded.
std::optional<ConvChoice> pick_conv_algo(const std::vector<ConvCandidate>& candidates,
                                         std::size_t workspace_limit, bool deterministic);

// The input channel counts to try, in order, for a convolution with c input channels: c itself,
// then the next multiples of 4 and of 8 above it.
// Note: cuDNN's NHWC kernels in bf16 and f16 want the channels to be a multiple of 8 (4 for
// some); the stem's 3 may have no algorithm at all in that layout. Extra input channels that
// are zero, with zero weights to match, leave the convolution unchanged, so the backend pads
// when cuDNN's own answer for c is "none" (the probe), and only then.
std::vector<int> channels_to_try(int c);

// The first of `channels` for which `has_algorithm` says yes; nothing when none does.
template <class Probe>
std::optional<int> first_supported(const std::vector<int>& channels, Probe&& has_algorithm) {
  for (const int c : channels)
    if (has_algorithm(c)) return c;
  return std::nullopt;
}

using ConvAlgoCache = std::map<ConvKey, ConvChoice>;

}  // namespace ringtrain
