// The CPU backend's f32 convolution passes, one layer at a time: milliseconds per call of the
// forward, input-gradient and filter-gradient passes of ResNet-18's 3x3 layers (CIFAR sizes),
// median of --reps calls after one untimed call, through the backend as training calls them.
// With ONEDNN_MAX_CPU_ISA=AVX2 it measures what an AVX2 machine runs.
//   build/bench/bench_conv --batch-size 64 --threads 2
#include <CLI/CLI.hpp>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "timing.hpp"

using namespace ringtrain;

namespace {

Tensor random_tensor(std::vector<int64_t> shape, std::mt19937_64& rng) {
  Tensor t = Tensor::zeros(shape, DType::f32);
  std::normal_distribution<float> dist;
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

double median_ms(int reps, const std::function<void()>& call) {
  call();
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = bench::Clock::now();
    call();
    times.push_back(bench::seconds_since(t0));
  }
  return bench::median(times) * 1e3;
}

}  // namespace

int main(int argc, char** argv) {
  int batch = 64, threads = 0, reps = 5;
  CLI::App app{"CPU convolution passes of ResNet-18's 3x3 layers, ms per call"};
  app.add_option("--batch-size", batch)->capture_default_str()->check(CLI::Range(1, 4096));
  app.add_option("--threads", threads, "0: all hardware threads")->capture_default_str();
  app.add_option("--reps", reps, "timed calls per pass")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  CLI11_PARSE(app, argc, argv);

  CpuBackend backend(threads);
  std::printf("kernels %s, batch %d, threads %d; ms per call: forward, input grad, filter grad\n",
              CpuBackend::kernel_isa().c_str(), batch, backend.threads());
  std::mt19937_64 rng(1);
  for (const auto& [channels, size] : {std::pair{64, 32}, {128, 16}, {256, 8}, {512, 4}}) {
    ConvGeometry g;
    g.n = batch, g.c = g.k = channels, g.h = g.w = size, g.r = g.s = 3, g.stride = 1, g.pad = 1;
    const Tensor x = random_tensor({g.n, g.c, g.h, g.w}, rng);
    const Tensor w = random_tensor({g.k, g.c, 3, 3}, rng);
    const Tensor dy = random_tensor({g.n, g.k, g.h, g.w}, rng);
    Tensor y = Tensor::zeros(dy.shape(), DType::f32), dx = Tensor::zeros(x.shape(), DType::f32),
           dw = Tensor::zeros(w.shape(), DType::f32);
    const double forward = median_ms(reps, [&] { backend.conv_forward(g, x, w, y); });
    const double data = median_ms(reps, [&] { backend.conv_backward_data(g, dy, w, dx); });
    const double filter = median_ms(reps, [&] { backend.conv_backward_filter(g, x, dy, dw); });
    std::printf("%3d -> %3d channels, %2dx%-2d: %8.2f %8.2f %8.2f\n", channels, channels, size,
                size, forward, data, filter);
  }
  return 0;
}
