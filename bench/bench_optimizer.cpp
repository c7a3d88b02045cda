// The optimizer step alone on the CPU: each --optimizer over a ResNet's parameters (random
// gradients), interleaved round by round, median milliseconds per step and the bytes it moves.
//   build/bench/bench_optimizer --depth 50 --rounds 7
#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <memory>
#include <random>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/nn/resnet.hpp"
#include "ringtrain/optim/make_optimizer.hpp"
#include "timing.hpp"

using namespace ringtrain;

int main(int argc, char** argv) {
  ResNetConfig mc;
  int rounds = 7, steps = 5, threads = 0;
  CLI::App app{"CPU optimizer-step benchmark"};
  app.add_option("--depth", mc.depth)->capture_default_str();
  app.add_option("--width", mc.width)->capture_default_str();
  app.add_option("--rounds", rounds, "interleaved rounds; each times every optimizer")
      ->capture_default_str();
  app.add_option("--steps", steps, "steps per optimizer and round")->capture_default_str();
  app.add_option("--threads", threads, "0: all hardware threads")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  CpuBackend backend(threads);
  ResNet model(mc, backend, DType::f32, 0);
  ParameterSet& params = model.parameters();
  std::mt19937_64 rng(1);
  std::normal_distribution<float> dist(0.0f, 1e-2f);
  Tensor grads = params.flat_grads();
  for (int64_t i = 0; i < grads.numel(); ++i) grads.data<float>()[i] = dist(rng);

  std::map<std::string, std::unique_ptr<Optimizer>> optimizers;
  std::map<std::string, std::vector<double>> times;
  for (const auto& [name, kind] : names_of<OptimizerKind>()) {
    OptimizerConfig c;
    c.kind = kind;
    optimizers[name] = make_optimizer(c, params, backend);
    optimizers[name]->step(1e-4f);  // first touch of the state
  }
  for (int r = 0; r < rounds; ++r)
    for (auto& [name, optimizer] : optimizers) {
      const auto t0 = bench::Clock::now();
      for (int s = 0; s < steps; ++s) optimizer->step(1e-4f);
      times[name].push_back(bench::seconds_since(t0) / steps);
    }
  const double elements = static_cast<double>(params.flat_size());
  std::printf("resnet%d width %.2f, %.1f M parameters, threads %d, median of %d rounds:\n",
              mc.depth, mc.width, elements * 1e-6, backend.threads(), rounds);
  for (auto& [name, optimizer] : optimizers) {
    // Bytes per element: the weight and each state tensor read and written, the gradient read
    // (LARS reads the weight and the gradient once more for its sums of squares).
    const double bytes = elements * 4 * (2 * (1 + optimizer->state().size()) + 1);
    const double s = bench::median(times[name]);
    std::printf("  %-6s %8.2f ms per step, %6.1f GB/s\n", name.c_str(), s * 1e3, bytes / s * 1e-9);
  }
  return 0;
}
