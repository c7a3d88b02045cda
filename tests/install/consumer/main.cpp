// Classifies one image with a checkpoint, through the installed library alone:
//   consumer CHECKPOINT DEPTH WIDTH SIZE
// The image is 3 x SIZE x SIZE with pixel i = sin(0.1 i); prints the logits, then the class.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/nn/resnet.hpp"
#include "ringtrain/train/checkpoint.hpp"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: consumer CHECKPOINT DEPTH WIDTH SIZE\n");
    return 2;
  }
  try {
    ringtrain::CpuBackend backend(1);
    ringtrain::ResNetConfig config;
    config.depth = std::atoi(argv[2]);
    config.width = std::atof(argv[3]);
    ringtrain::ResNet model(config, backend, ringtrain::DType::f32, 0);
    ringtrain::Tensor momentum = backend.zeros(model.parameters().flat_params().shape(),
                                               model.parameters().flat_params().dtype());
    ringtrain::load_checkpoint(argv[1], backend, model.parameters(), momentum);

    const int size = std::atoi(argv[4]);
    ringtrain::Tensor image = ringtrain::Tensor::zeros({1, 3, size, size}, ringtrain::DType::f32);
    for (int64_t i = 0; i < image.numel(); ++i)
      image.data<float>()[i] = static_cast<float>(std::sin(0.1 * static_cast<double>(i)));
    const ringtrain::Tensor& logits = model.forward(image, false);
    int best = 0;
    for (int k = 0; k < logits.dim(1); ++k) {
      std::printf("%.9g ", logits.data<float>()[k]);
      if (logits.data<float>()[k] > logits.data<float>()[best]) best = k;
    }
    std::printf("\nclass %d\n", best);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
}
