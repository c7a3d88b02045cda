// SyncBatchNorm makes DDP exact for a ResNet with batch norm: every rank normalises with the
// statistics of the whole global batch, so DDP over N ranks must equal one process trained on
// all ranks' batches concatenated, parameters and running statistics alike.
#include <gtest/gtest.h>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/dist/mpi_communicator.hpp"
#include "ringtrain/dist/world.hpp"
#include "ringtrain/nn/forward_backward.hpp"
#include "ringtrain/optim/sgd.hpp"
#include "ringtrain/parallel/ddp.hpp"
#include "shard_batch.hpp"

namespace ringtrain {
namespace {

constexpr int kPerRank = 3;

void expect_close(const Tensor& a, const Tensor& b, double tolerance, const char* what) {
  for (int64_t i = 0; i < a.numel(); ++i) {
    const float x = a.data<float>()[i], y = b.data<float>()[i];
    ASSERT_NEAR(x, y, tolerance * std::max(1.0f, std::abs(y))) << what << " element " << i;
  }
}

TEST(SyncBatchNorm, DdpEqualsOneProcessOnTheConcatenatedBatch) {
  World& world = World::get();
  MpiCommunicator comm(world.comm());
  CpuBackend backend(1);
  ResNetConfig mc;
  mc.depth = 18;
  mc.width = 0.125;
  SgdConfig sc;

  ResNet model(mc, backend, DType::f32, 3);
  model.set_sync_batch_norm(&comm);
  DistributedDataParallel ddp(model.parameters(), comm, backend, DdpConfig{});
  Sgd sgd(model.parameters(), backend, sc);

  ResNet ref(mc, backend, DType::f32, 3);
  Sgd ref_sgd(ref.parameters(), backend, sc);
  const int all = kPerRank * comm.size();

  for (int step = 0; step < 3; ++step) {
    Tensor x = Tensor::zeros({kPerRank, 3, 8, 8}, DType::f32);
    Tensor y = Tensor::zeros({kPerRank}, DType::i32);
    test::fill_shard(comm.rank(), step, kPerRank, 10, x, y, 0);
    model.parameters().zero_grad(backend);
    forward_backward(model, x, y, LossSettings{});
    ddp.finish_gradients();
    sgd.step(0.05f);

    Tensor X = Tensor::zeros({all, 3, 8, 8}, DType::f32), Y = Tensor::zeros({all}, DType::i32);
    for (int r = 0; r < comm.size(); ++r)
      test::fill_shard(r, step, kPerRank, 10, X, Y, r * kPerRank);
    ref.parameters().zero_grad(backend);
    forward_backward(ref, X, Y, LossSettings{});
    ref_sgd.step(0.05f);
  }
  expect_close(model.parameters().flat_params(), ref.parameters().flat_params(), 1e-4, "parameter");
  expect_close(model.parameters().flat_buffers(), ref.parameters().flat_buffers(), 1e-4,
               "running statistic");
}

}  // namespace
}  // namespace ringtrain
