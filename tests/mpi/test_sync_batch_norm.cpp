// SyncBatchNorm makes DDP exact for a ResNet with batch norm: every rank normalises with the
// statistics of the whole global batch, so DDP over N ranks must equal one process trained on
// all ranks' batches concatenated, parameters and running statistics alike.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/distributed/mpi_communicator.hpp"
#include "ringtrain/distributed/world.hpp"
#include "ringtrain/nn/forward_backward.hpp"
#include "ringtrain/optim/sgd.hpp"
#include "ringtrain/parallel/ddp.hpp"
#include "shard_batch.hpp"

namespace ringtrain {
namespace {

constexpr int kPerRank = 3;

void expect_close(const Tensor& a, const Tensor& b, int64_t count, const char* what, int step) {
  for (int64_t i = 0; i < count; ++i) {
    const float x = a.data<float>()[i], y = b.data<float>()[i];
    ASSERT_NEAR(x, y, 1e-4 * std::max(1.0f, std::abs(y)))
        << what << " element " << i << " after step " << step;
  }
}

void copy_into(Tensor& to, const Tensor& from) {
  std::copy(from.data<float>(), from.data<float>() + from.numel(), to.data<float>());
}

// Note: DDP and the one process add the same products in different orders (each rank's part of
// the batch, then the all-reduce), so one step's results agree to rounding, about 2e-6 here.
// Trained on from there, the difference grows: at lr 0.05 on batches this small it grew about
// tenfold a step (2e-6, 2e-5, 1e-4 in the stem's gradient), and once it moves a pre-activation
// across zero, that ReLU passes another gradient: 0.03 in one weight at the third step with
// oneDNN's AVX2 kernels in the sanitizer build. That is the training's sensitivity, not an error
// of DDP, so every step starts both from the one process's state (parameters, momentum and
// running statistics) and compares what that step computed.
TEST(SyncBatchNorm, DdpEqualsOneProcessOnTheConcatenatedBatch) {
  World& world = World::get();
  MpiCommunicator comm(world.comm());
  CpuBackend backend(1);
  ResNetConfig mc;
  mc.depth = 18;
  mc.width = 0.125;
  OptimizerConfig sc;

  ResNet model(mc, backend, DType::f32, 3);
  model.set_sync_batch_norm(&comm);
  DistributedDataParallel ddp(model.parameters(), comm, backend, DdpConfig{});
  Sgd sgd(model.parameters(), backend, sc);
  ParameterSet& ps = model.parameters();

  ResNet ref(mc, backend, DType::f32, 3);
  Sgd ref_sgd(ref.parameters(), backend, sc);
  ParameterSet& rs = ref.parameters();
  const int all = kPerRank * comm.size();

  for (int step = 0; step < 3; ++step) {
    copy_into(ps.flat_params(), rs.flat_params());
    copy_into(ps.flat_buffers(), rs.flat_buffers());
    copy_into(sgd.momentum_buffer(), ref_sgd.momentum_buffer());

    Tensor x = Tensor::zeros({kPerRank, 3, 8, 8}, DType::f32);
    Tensor y = Tensor::zeros({kPerRank}, DType::i32);
    test::fill_shard(comm.rank(), step, kPerRank, 10, x, y, 0);
    ps.zero_grad(backend);
    forward_backward(model, x, y, LossSettings{});
    ddp.finish_gradients();
    sgd.step(0.05f);

    Tensor X = Tensor::zeros({all, 3, 8, 8}, DType::f32), Y = Tensor::zeros({all}, DType::i32);
    for (int r = 0; r < comm.size(); ++r)
      test::fill_shard(r, step, kPerRank, 10, X, Y, r * kPerRank);
    rs.zero_grad(backend);
    forward_backward(ref, X, Y, LossSettings{});
    ref_sgd.step(0.05f);

    expect_close(ps.flat_grads(), rs.flat_grads(), rs.flat_size(), "gradient", step);
    expect_close(ps.flat_params(), rs.flat_params(), rs.flat_size(), "parameter", step);
    expect_close(ps.flat_buffers(), rs.flat_buffers(), rs.flat_buffers().numel(),
                 "running statistic", step);
  }
}

}  // namespace
}  // namespace ringtrain
