// Training throughput of the CPU backend: images/s and achieved GFLOP/s of full training steps
// (forward, loss, backward, SGD) on random data, median of the timed steps; and the memory:
// peak resident set, and its growth from before the model was built, per image of the batch.
//   build/bench/bench_train_cpu --depth 50 --batch-size 32 --steps 10
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>

#include <sys/resource.h>
#include <unistd.h>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/nn/forward_backward.hpp"
#include "ringtrain/optim/sgd.hpp"
#include "timing.hpp"

using namespace ringtrain;

namespace {

// The resident set now and at its peak, in MiB.
double resident_mib() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return double(resident) * double(sysconf(_SC_PAGESIZE)) / (1 << 20);
}

double peak_resident_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return double(usage.ru_maxrss) / 1024;  // KiB on Linux
}

}  // namespace

int main(int argc, char** argv) {
  ResNetConfig mc;
  int batch = 32, steps = 10, warmup = 2, threads = 0, size = 32;
  CLI::App app{"CPU training-step benchmark"};
  app.add_option("--depth", mc.depth)->capture_default_str();
  app.add_option("--width", mc.width)->capture_default_str();
  std::string stem = "cifar";
  app.add_option("--stem", stem)->capture_default_str();
  app.add_option("--batch-size", batch)->capture_default_str();
  app.add_option("--image-size", size)->capture_default_str();
  app.add_option("--steps", steps, "timed steps")->capture_default_str();
  app.add_option("--warmup", warmup, "untimed steps first")->capture_default_str();
  app.add_option("--threads", threads, "0: all hardware threads")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  mc.stem = parse<Stem>("--stem", stem);

  const double resident_before = resident_mib();
  CpuBackend backend(threads);
  ResNet model(mc, backend, DType::f32, 0);
  Sgd sgd(model.parameters(), backend, OptimizerConfig{});
  std::mt19937_64 rng(1);
  std::normal_distribution<float> dist;
  Tensor images = Tensor::zeros({batch, 3, size, size}, DType::f32);
  for (int64_t i = 0; i < images.numel(); ++i) images.data<float>()[i] = dist(rng);
  Tensor labels = Tensor::zeros({batch}, DType::i32);
  for (int i = 0; i < batch; ++i) labels.data<int>()[i] = i % mc.classes;

  std::vector<double> times;
  for (int s = 0; s < warmup + steps; ++s) {
    const auto t0 = std::chrono::steady_clock::now();
    model.parameters().zero_grad(backend);
    forward_backward(model, images, labels, LossSettings{});
    sgd.step(0.01f);
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s >= warmup) times.push_back(dt);
  }
  const double median = bench::median(times);
  const double gflop_per_image = 6.0 * model.macs_per_image(size, size) * 1e-9;
  const double peak = peak_resident_mib();
  std::printf(
      "resnet%d-%s width %.2f batch %d threads %d: median step %.3f s, %.1f img/s, "
      "%.1f GFLOP/s (%.3f GFLOP per image per step), peak RSS %.0f MiB, %.2f MiB per image "
      "(workspace %.1f MiB)\n",
      mc.depth, stem.c_str(), mc.width, batch, backend.threads(), median, batch / median,
      batch / median * gflop_per_image, gflop_per_image, peak, (peak - resident_before) / batch,
      model.workspace_bytes() / 1048576.0);
  return 0;
}
