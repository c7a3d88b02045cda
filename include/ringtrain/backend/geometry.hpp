#pragma once
#include <cstdint>
#include <string>

namespace ringtrain {

// Geometry of a 2-D convolution without bias: x[n,c,h,w] * w[k,c,r,s] -> y[n,k,p,q].
struct ConvGeometry {
  int n = 0, c = 0, h = 0, w = 0;  // input
  int k = 0, r = 0, s = 0;         // filters: count, height, width
  int stride = 1, pad = 0;
  int p() const { return (h + 2 * pad - r) / stride + 1; }
  int q() const { return (w + 2 * pad - s) / stride + 1; }
  int64_t macs() const { return int64_t{n} * k * p() * q() * c * r * s; }
  std::string str() const;
};

// The three passes of a convolution.
enum class ConvPass { forward, backward_data, backward_filter };

// Geometry of a square max pool with implicit -inf padding.
struct PoolGeometry {
  int n = 0, c = 0, h = 0, w = 0;
  int window = 3, stride = 2, pad = 1;
  int p() const { return (h + 2 * pad - window) / stride + 1; }
  int q() const { return (w + 2 * pad - window) / stride + 1; }
};

}  // namespace ringtrain
