// DataParallel with 2 CPU devices in one process against DDP with 2 ranks, on a ResNet with
// batch norm: both compute BN statistics per device chunk, so the parameters must agree.
#include <gtest/gtest.h>

#include <random>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/distributed/mpi_communicator.hpp"
#include "ringtrain/distributed/world.hpp"
#include "ringtrain/nn/forward_backward.hpp"
#include "ringtrain/optim/sgd.hpp"
#include "ringtrain/parallel/backends.hpp"
#include "ringtrain/parallel/data_parallel.hpp"
#include "ringtrain/parallel/ddp.hpp"
#include "shard_batch.hpp"

namespace ringtrain {
namespace {

// DataParallel's replicas on the CPU, a thread each.
DeviceRequest cpu_replicas(int devices) {
  DeviceRequest r;
  r.replicas = devices;
  r.threads = devices;
  return r;
}

constexpr int kChunk = 4;

void fill(int device, int step, Tensor& x, Tensor& labels, int64_t row) {
  test::fill_shard(device, step, kChunk, 10, x, labels, row);
}

TEST(DataParallel, TwoDevicesEqualDdpWithTwoRanks) {
  World& world = World::get();
  if (world.size() != 2)
    GTEST_SKIP() << "compares with exactly 2 DDP ranks; this run has " << world.size();
  MpiCommunicator comm(world.comm());
  ResNetConfig mc;
  mc.depth = 18;
  mc.width = 0.125;
  OptimizerConfig sc;

  CpuBackend backend(1);
  ResNet ddp_model(mc, backend, DType::f32, 11);
  DistributedDataParallel ddp(ddp_model.parameters(), comm, backend, DdpConfig{});
  ddp.broadcast_state();
  Sgd ddp_sgd(ddp_model.parameters(), backend, sc);

  DataParallel dp(mc, make_backends(cpu_replicas(2), nullptr), 11);
  Sgd dp_sgd(dp.primary().parameters(), dp.primary_backend(), sc);

  for (int step = 0; step < 3; ++step) {
    Tensor x = Tensor::zeros({kChunk, 3, 8, 8}, DType::f32),
           y = Tensor::zeros({kChunk}, DType::i32);
    fill(comm.rank(), step, x, y, 0);
    ddp_model.parameters().zero_grad(backend);
    forward_backward(ddp_model, x, y, LossSettings{});
    ddp.finish_gradients();
    ddp_sgd.step(0.05f);

    Tensor X = Tensor::zeros({2 * kChunk, 3, 8, 8}, DType::f32);
    Tensor Y = Tensor::zeros({2 * kChunk}, DType::i32);
    for (int d = 0; d < 2; ++d) fill(d, step, X, Y, int64_t{d} * kChunk);
    dp.primary().parameters().zero_grad(dp.primary_backend());
    dp.step(X, Y, LossSettings{});
    dp_sgd.step(0.05f);
  }
  const float* a = ddp_model.parameters().flat_params().data<float>();
  const float* b = dp.primary().parameters().flat_params().data<float>();
  for (int64_t i = 0; i < ddp_model.parameters().flat_size(); ++i)
    ASSERT_NEAR(a[i], b[i], 2e-5 * std::max(1.0f, std::abs(b[i]))) << "parameter element " << i;
  // DataParallel keeps device 0's BN statistics: those of rank 0's chunk under DDP.
  if (comm.rank() == 0) {
    const float* ra = ddp_model.parameters().flat_buffers().data<float>();
    const float* rb = dp.primary().parameters().flat_buffers().data<float>();
    for (int64_t i = 0; i < ddp_model.parameters().flat_buffers().numel(); ++i)
      ASSERT_NEAR(ra[i], rb[i], 1e-4 * std::max(1.0f, std::abs(rb[i]))) << "buffer element " << i;
  }
}

}  // namespace
}  // namespace ringtrain
