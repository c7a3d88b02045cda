// The logits ringtrain computes for a checkpoint's model, for the interop test to compare torch's
// with: N images drawn from a normal distribution (seed 1), shaped as the model's input, and
// the eval-mode logits, each written as raw little-endian f32.
//   write_logits CHECKPOINT N IMAGES.f32 LOGITS.f32
#include <cstdio>
#include <fstream>
#include <random>
#include <string>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/checkpoint/model_file.hpp"

namespace {

void write_raw(const std::string& path, const ringtrain::Tensor& t) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
  RT_CHECK(out.good(), "write_logits: writing ", path, " failed");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ringtrain;
  if (argc != 5) {
    std::fprintf(stderr, "usage: write_logits CHECKPOINT N IMAGES.f32 LOGITS.f32\n");
    return 2;
  }
  try {
    CpuBackend cpu;
    LoadedModel loaded = load_model(argv[1], cpu);
    const CheckpointMeta& m = loaded.meta;
    Tensor images = Tensor::zeros(
        {std::stoll(argv[2]), m.model_config.in_channels, m.image_height, m.image_width},
        DType::f32);
    std::mt19937_64 rng(1);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int64_t i = 0; i < images.numel(); ++i) images.data<float>()[i] = normal(rng);
    Tensor logits = Tensor::zeros({images.dim(0), m.model_config.classes}, DType::f32);
    cpu.copy(loaded.model->forward(images, false), logits);
    write_raw(argv[3], images);
    write_raw(argv[4], logits);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "write_logits: %s\n", e.what());
    return 1;
  }
  return 0;
}
