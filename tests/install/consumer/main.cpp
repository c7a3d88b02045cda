// Classifies one image with a checkpoint, through the installed library alone:
//   consumer CHECKPOINT
// The image is the checkpoint's size, pixel i = 0.5 + 0.5 sin(0.1 i) on the 0-1 scale,
// normalised as the checkpoint's loader did. Prints the logits, then the class and its name.
#include <cmath>
#include <cstdio>
#include <exception>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/checkpoint/model_file.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer CHECKPOINT\n");
    return 2;
  }
  try {
    ringtrain::CpuBackend backend(1);
    ringtrain::LoadedModel loaded = ringtrain::load_model(argv[1], backend);
    const ringtrain::CheckpointMeta& meta = loaded.meta;
    const int64_t c = meta.model_config.in_channels, h = meta.image_height, w = meta.image_width;
    ringtrain::Tensor image = ringtrain::Tensor::zeros({1, c, h, w}, ringtrain::DType::f32);
    for (int64_t i = 0; i < image.numel(); ++i) {
      const double pixel = 0.5 + 0.5 * std::sin(0.1 * static_cast<double>(i));
      const size_t channel = static_cast<size_t>(i / (h * w));
      image.data<float>()[i] =
          static_cast<float>((pixel - meta.norm.mean[channel]) / meta.norm.std[channel]);
    }
    const ringtrain::Tensor& logits = loaded.model->forward(image, false);
    const float* z = logits.data<float>();
    int best = 0;
    for (int k = 0; k < logits.dim(1); ++k) {
      std::printf("%.9g ", z[k]);
      if (z[k] > z[best]) best = k;
    }
    std::printf("\nclass %d %s\n", best, meta.class_names.at(static_cast<size_t>(best)).c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
}
