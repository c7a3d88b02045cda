#pragma once
#include <cstdint>
#include <string>

namespace ringtrain {

// Note: C++'s `/` truncates toward zero, so (-1) / 2 == 0. Every output-extent and valid-range
// computation of convolution and pooling has a numerator that goes negative on small maps (a
// 1-pixel map under a 3x3 kernel, say), where truncation gives one output too many and the
// kernels read and write past the image. These round toward -inf and +inf for any sign of `a`
// (b > 0).
constexpr int floor_div(int a, int b) {
  return a / b - (a % b != 0 && a < 0 ? 1 : 0);
}
constexpr int ceil_div(int a, int b) {
  return -floor_div(-a, b);
}

// Output extent of a window sliding over `size` with padding: 0 or less when it does not fit.
constexpr int window_outputs(int size, int pad, int window, int stride) {
  return floor_div(size + 2 * pad - window, stride) + 1;
}

// Geometry of a 2-D convolution without bias: x[n,c,h,w] * w[k,c,r,s] -> y[n,k,p,q].
struct ConvGeometry {
  int n = 0, c = 0, h = 0, w = 0;  // input
  int k = 0, r = 0, s = 0;         // filters: count, height, width
  int stride = 1, pad = 0;
  int p() const { return window_outputs(h, pad, r, stride); }
  int q() const { return window_outputs(w, pad, s, stride); }
  int64_t macs() const { return int64_t{n} * k * p() * q() * c * r * s; }
  std::string str() const;
};

// The three passes of a convolution.
enum class ConvPass { forward, backward_data, backward_filter };

// Geometry of a square max pool with implicit -inf padding.
struct PoolGeometry {
  int n = 0, c = 0, h = 0, w = 0;
  int window = 3, stride = 2, pad = 1;
  int p() const { return window_outputs(h, pad, window, stride); }
  int q() const { return window_outputs(w, pad, window, stride); }
};

}  // namespace ringtrain
