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

// One result of cuDNN's search (cudnnFind*Algorithm), in the order cuDNN ranks them.
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
};

// The fastest candidate that succeeded, fits the workspace limit and, when asked, is
// deterministic. When none fits the limit, the one with the smallest workspace (a slow
// convolution beats none); nothing when no candidate succeeded at all.
std::optional<ConvChoice> pick_conv_algo(const std::vector<ConvCandidate>& candidates,
                                         std::size_t workspace_limit, bool deterministic);

using ConvAlgoCache = std::map<ConvKey, ConvChoice>;

}  // namespace ringtrain
