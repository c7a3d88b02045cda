#include "ringtrain/data/batch.hpp"

#include <cmath>

namespace ringtrain {

Normalization channel_statistics(const Split& s) {
  std::vector<double> sum(static_cast<size_t>(s.channels), 0.0), sq(sum);
  const int64_t pixels = s.count * s.height * s.width;
  for (int64_t p = 0; p < pixels; ++p)
    for (int c = 0; c < s.channels; ++c) {
      const double v = s.images[static_cast<size_t>(p * s.channels + c)] / 255.0;
      sum[c] += v;
      sq[c] += v * v;
    }
  Normalization n;
  for (int c = 0; c < s.channels; ++c) {
    const double mean = sum[c] / pixels;
    n.mean.push_back(static_cast<float>(mean));
    n.std.push_back(static_cast<float>(std::sqrt(std::max(sq[c] / pixels - mean * mean, 1e-12))));
  }
  return n;
}

void assemble_batch(const Split& s, const int64_t* indices, int n, const Normalization& norm,
                    float* images, int32_t* labels) {
  const int64_t plane = int64_t{s.height} * s.width;
  for (int i = 0; i < n; ++i) {
    const uint8_t* src = s.image(indices[i]);
    labels[i] = s.labels[static_cast<size_t>(indices[i])];
    for (int c = 0; c < s.channels; ++c) {
      const float scale = 1.0f / (255.0f * norm.std[c]), shift = norm.mean[c] / norm.std[c];
      float* dst = images + (int64_t{i} * s.channels + c) * plane;
      for (int64_t p = 0; p < plane; ++p) dst[p] = src[p * s.channels + c] * scale - shift;
    }
  }
}

}  // namespace ringtrain
