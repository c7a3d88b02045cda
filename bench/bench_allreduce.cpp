// All-reduce bandwidth of the MPI communicator (host buffers) or, with --device cuda, the NCCL
// communicator (one GPU per rank) across message sizes, with nccl-tests' definitions:
// algbw = bytes / time, busbw = algbw * 2(n-1)/n. Run under mpirun:
//   mpirun -np 2 build/bench/bench_allreduce
//   mpirun -np 8 build/bench/bench_allreduce --device cuda
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "ringtrain/backend/cuda/cuda_backend.hpp"
#include "ringtrain/backend/devices.hpp"
#include "ringtrain/distributed/device_assignment.hpp"
#include "ringtrain/distributed/mpi_communicator.hpp"
#include "ringtrain/distributed/nccl_communicator.hpp"
#include "ringtrain/distributed/world.hpp"
#include "timing.hpp"

using namespace ringtrain;

int main(int argc, char** argv) {
  std::string device = "cpu";
  CLI::App app{"all-reduce bandwidth"};
  app.add_option("--device", device, "cpu (MPI) or cuda (NCCL)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  World& world = World::get();
  MpiCommunicator host(world.comm());
  std::unique_ptr<Backend> gpu;
  std::unique_ptr<Communicator> nccl;
  if (device == "cuda") {
    try {
      CudaOptions o;
      o.device = assign_device(world, probe_devices().cuda_devices);
      o.rank = world.rank();
      gpu = make_cuda_backend(o);
      nccl = make_nccl_communicator(world.comm(), *gpu, CommOptions{});
    } catch (const std::exception& e) {
      world.abort(e.what());
    }
  }
  Communicator& comm = nccl ? *nccl : host;
  const int n = comm.size();
  if (world.is_root())
    std::printf("%d ranks, %s\n%12s %10s %12s %12s\n", n, comm.name().c_str(), "bytes", "time us",
                "algbw GB/s", "busbw GB/s");
  for (int64_t bytes = 4096; bytes <= (int64_t{1} << 27); bytes *= 4) {
    Tensor t = gpu ? gpu->zeros({bytes / 4}, DType::f32) : Tensor::zeros({bytes / 4}, DType::f32);
    const int reps = bytes < (1 << 22) ? 50 : 5;
    std::vector<double> times;
    for (int r = 0; r < reps + 2; ++r) {
      comm.barrier();
      const auto t0 = std::chrono::steady_clock::now();
      comm.wait(comm.all_reduce_async(t, 0, t.numel(), ReduceOp::sum));
      const double dt =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (r >= 2) times.push_back(dt);
    }
    double med = bench::median(times);
    comm.all_reduce_host(&med, 1, ReduceOp::average);
    const double algbw = bytes / med * 1e-9;
    if (world.is_root())
      std::printf("%12lld %10.1f %12.3f %12.3f\n", static_cast<long long>(bytes), med * 1e6, algbw,
                  algbw * 2.0 * (n - 1) / n);
  }
  return 0;
}
