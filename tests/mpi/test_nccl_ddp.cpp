// DDP over NCCL on GPUs, one per rank, with SyncBatchNorm in f32: after three steps every
// parameter equals a one-process CPU reference trained on all ranks' batches concatenated.
// Skipped, saying why, unless the node has a GPU for every rank.
#include <gtest/gtest.h>

#include "../gpu/gpu_test_util.hpp"
#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/distributed/device_assignment.hpp"
#include "ringtrain/distributed/nccl_communicator.hpp"
#include "ringtrain/nn/forward_backward.hpp"
#include "ringtrain/optim/sgd.hpp"
#include "ringtrain/parallel/ddp.hpp"
#include "shard_batch.hpp"

namespace ringtrain {
namespace {

constexpr int kPerRank = 4;

TEST(NcclDdp, SyncBatchNormDdpOnGpusEqualsOneCpuProcess) {
  World& world = World::get();
  const DeviceInventory devices = probe_devices();
  if (devices.cuda_devices < world.local_size())
    GTEST_SKIP() << "needs a GPU per rank: " << world.local_size() << " ranks, "
                 << devices.cuda_devices << " GPUs (" << devices.why_none << ")";
  CudaOptions o;
  o.device = assign_device(world, devices.cuda_devices);
  o.rank = world.rank();
  o.compute = DType::f32;
  auto gpu = make_cuda_backend(o);
  auto comm = make_nccl_communicator(world.comm(), *gpu, CommOptions{60, true});
  CpuBackend cpu(1);
  ResNetConfig mc;
  mc.depth = 18;
  mc.width = 0.25;

  ResNet model(mc, *gpu, DType::f32, 3);
  model.set_sync_batch_norm(comm.get());
  DistributedDataParallel ddp(model.parameters(), *comm, *gpu, DdpConfig{});
  ddp.broadcast_state();
  Sgd sgd(model.parameters(), *gpu, OptimizerConfig{});

  ResNet ref(mc, cpu, DType::f32, 3);
  Sgd ref_sgd(ref.parameters(), cpu, OptimizerConfig{});
  const int all = kPerRank * comm->size();

  for (int step = 0; step < 3; ++step) {
    Tensor x = Tensor::zeros({kPerRank, 3, 16, 16}, DType::f32);
    Tensor y = Tensor::zeros({kPerRank}, DType::i32);
    test::fill_shard(comm->rank(), step, kPerRank, 10, x, y, 0);
    Tensor y_dev = gpu->zeros({kPerRank}, DType::i32);
    gpu->copy(y, y_dev);
    model.parameters().zero_grad(*gpu);
    forward_backward(model, test::upload(*gpu, x, DType::f32), y_dev, LossSettings{});
    ddp.finish_gradients();
    sgd.step(0.05f);

    Tensor X = Tensor::zeros({all, 3, 16, 16}, DType::f32), Y = Tensor::zeros({all}, DType::i32);
    for (int r = 0; r < comm->size(); ++r)
      test::fill_shard(r, step, kPerRank, 10, X, Y, r * kPerRank);
    ref.parameters().zero_grad(cpu);
    forward_backward(ref, X, Y, LossSettings{});
    ref_sgd.step(0.05f);
  }
  ParameterSet &got = model.parameters(), &want = ref.parameters();
  for (size_t id = 0; id < want.param_infos().size(); ++id) {
    const int i = static_cast<int>(id);
    EXPECT_LE(test::max_rel_diff(test::download(*gpu, got.param(i)), want.param(i)), 1e-4)
        << want.param_infos()[id].name;
  }
}

}  // namespace
}  // namespace ringtrain
