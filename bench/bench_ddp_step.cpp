// Exposed communication of a DDP training step on the CPU backend: the time finish_gradients()
// waits after backward, with the buckets overlapped with backward and without, alternating in
// one run. Run under mpirun:
//   mpirun -np 2 build/bench/bench_ddp_step --depth 50 --batch-size 8 --steps 4
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/distributed/mpi_communicator.hpp"
#include "ringtrain/distributed/world.hpp"
#include "ringtrain/nn/forward_backward.hpp"
#include "ringtrain/optim/sgd.hpp"
#include "ringtrain/parallel/ddp.hpp"
#include "timing.hpp"

using namespace ringtrain;

using bench::Clock;
using bench::median;
using bench::seconds_since;

int main(int argc, char** argv) {
  World& world = World::get();
  ResNetConfig mc;
  int batch = 8, steps = 4, threads = 1;
  double bucket_mb = 25;
  CLI::App app{"DDP exposed-communication benchmark"};
  app.add_option("--depth", mc.depth)->capture_default_str();
  app.add_option("--width", mc.width)->capture_default_str();
  app.add_option("--batch-size", batch, "per rank")->capture_default_str();
  app.add_option("--steps", steps, "timed steps per setting")->capture_default_str();
  app.add_option("--threads", threads, "CPU threads per rank")->capture_default_str();
  app.add_option("--bucket-cap-mb", bucket_mb)->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  MpiCommunicator comm(world.comm());
  CpuBackend backend(threads);
  ResNet model(mc, backend, DType::f32, 0);
  Sgd sgd(model.parameters(), backend, OptimizerConfig{});
  std::mt19937_64 rng(static_cast<uint64_t>(world.rank()));
  std::normal_distribution<float> dist;
  Tensor images = Tensor::zeros({batch, 3, 32, 32}, DType::f32);
  for (int64_t i = 0; i < images.numel(); ++i) images.data<float>()[i] = dist(rng);
  Tensor labels = Tensor::zeros({batch}, DType::i32);
  for (int i = 0; i < batch; ++i) labels.data<int>()[i] = i % mc.classes;

  for (bool overlap : {true, false, true, false}) {
    DistributedDataParallel ddp(model.parameters(), comm, backend,
                                DdpConfig{bucket_mb, 1.0, overlap});
    std::vector<double> step_s, exposed_s;
    for (int s = 0; s < steps + 1; ++s) {
      comm.barrier();
      const auto t0 = Clock::now();
      model.parameters().zero_grad(backend);
      forward_backward(model, images, labels, LossSettings{});
      const auto t1 = Clock::now();
      ddp.finish_gradients();
      const double exposed = seconds_since(t1);
      sgd.step(0.01f);
      if (s > 0) {
        step_s.push_back(seconds_since(t0));
        exposed_s.push_back(exposed);
      }
    }
    double m[2] = {median(step_s), median(exposed_s)};
    comm.all_reduce_host(m, 2, ReduceOp::average);
    if (world.is_root())
      std::printf(
          "resnet%d batch %d/rank x %d ranks, %zu buckets, overlap %-3s: step %.3f s, "
          "exposed communication %.1f ms (%.1f%% of the step)\n",
          mc.depth, batch, comm.size(), ddp.buckets().size(), overlap ? "on" : "off", m[0],
          m[1] * 1e3, 100 * m[1] / m[0]);
  }
  return 0;
}
