#pragma once
// An independent reference for the evaluation and prediction tests: images normalised by the
// formula (v / 255 - mean) / std into one f32 NCHW batch, the model run on it in one forward,
// and the logits and cross-entropy computed on the host in double.
#include <cmath>
#include <cstdint>
#include <vector>

#include "ringtrain/backend/backend.hpp"
#include "ringtrain/loader/augment.hpp"
#include "ringtrain/nn/resnet.hpp"

namespace ringtrain::test {

// images: each HWC uint8 of h x w x c.
inline std::vector<float> reference_logits(ResNet& model, Backend& backend,
                                           const std::vector<std::vector<uint8_t>>& images, int h,
                                           int w, int c, const Normalization& norm) {
  const int64_t n = static_cast<int64_t>(images.size());
  Tensor x = Tensor::zeros({n, c, h, w}, DType::f32);
  float* px = x.data<float>();
  for (int64_t i = 0; i < n; ++i)
    for (int ch = 0; ch < c; ++ch)
      for (int y = 0; y < h; ++y)
        for (int xx = 0; xx < w; ++xx) {
          const double v = images[size_t(i)][size_t((y * w + xx) * c + ch)] / 255.0;
          px[((i * c + ch) * h + y) * w + xx] =
              static_cast<float>((v - norm.mean[size_t(ch)]) / norm.std[size_t(ch)]);
        }
  const Tensor& logits = model.forward(x, false);
  Tensor host = Tensor::zeros(logits.shape(), DType::f32);
  backend.copy(logits, host);
  return std::vector<float>(host.data<float>(), host.data<float>() + host.numel());
}

// -log softmax(row)[label], in double.
inline double cross_entropy(const float* row, int classes, int label) {
  double top = row[0];
  for (int k = 1; k < classes; ++k) top = std::max(top, double(row[k]));
  double sum = 0;
  for (int k = 0; k < classes; ++k) sum += std::exp(double(row[k]) - top);
  return std::log(sum) + top - row[label];
}

}  // namespace ringtrain::test
