// The NCCL communicator in one process, one rank, without MPI: its collectives leave the data
// as it was (one rank), kernels launched after them still succeed, an all-reduce waits for the
// kernels issued before it, and DDP's bucketed overlap and SyncBatchNorm over it give the
// gradients of the plain single-process step. Skipped, with the reason,
// where there is no GPU.
#include "gpu_test_util.hpp"
#include "ringtrain/distributed/nccl_communicator.hpp"
#include "ringtrain/nn/forward_backward.hpp"
#include "ringtrain/parallel/ddp.hpp"

namespace ringtrain {
namespace {

using test::download;
using test::random_f32;
using test::upload;

std::unique_ptr<Communicator> one_rank_nccl(Backend& gpu) {
  return make_nccl_communicator(make_nccl_unique_id(), 0, 1, gpu, CommOptions{60, false});
}

void expect_equal(const Tensor& got, const Tensor& want, const char* what) {
  ASSERT_EQ(got.numel(), want.numel()) << what;
  for (int64_t i = 0; i < want.numel(); ++i)
    ASSERT_EQ(got.data<float>()[i], want.data<float>()[i]) << what << " element " << i;
}

TEST(NcclOneRank, CollectivesKeepTheDataAndLaterKernelsLaunch) {
  RT_SKIP_WITHOUT_GPU();
  auto gpu = test::gpu_backend(DType::f32);
  auto comm = one_rank_nccl(*gpu);
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->size(), 1);
  std::mt19937_64 rng(9);
  const Tensor host = random_f32({4096}, rng);
  Tensor dev = upload(*gpu, host, DType::f32);
  // Many collectives in a row: waits that find them unfinished poll cudaEventQuery, whose
  // "not ready" must not surface as the next kernel's launch error.
  for (int i = 0; i < 50; ++i) {
    const CommHandle a = comm->all_reduce_async(dev, 0, 1000, ReduceOp::sum);
    const CommHandle b = comm->all_reduce_async(dev, 1000, 3096, ReduceOp::average);
    comm->progress();
    comm->wait(b);
    comm->wait_on_device(a);
    comm->broadcast(dev, 0);
    gpu->scale(dev, 1.0);
  }
  expect_equal(download(*gpu, dev), host, "buffer after the collectives");
  double values[3] = {1.5, -2.0, 7.0};
  comm->all_reduce_host(values, 3, ReduceOp::sum);
  EXPECT_EQ(values[0], 1.5);
  EXPECT_EQ(values[1], -2.0);
  EXPECT_EQ(values[2], 7.0);
  comm->barrier();
  EXPECT_THROW(comm->wait(12345), Error);
  EXPECT_THROW(comm->wait_on_device(12345), Error);
}

// Note: on one rank NCCL's average still runs a kernel over the buffer (x / 1, in place, on the
// communicator's stream). Were the all-reduce not ordered after the compute stream, it would
// read the buffer while the chain of kernels below is still doubling and halving it, and write
// a doubled value back after the chain has ended. With the order, every element is `value`.
TEST(NcclOneRank, AnAllReduceWaitsForTheKernelsIssuedBeforeIt) {
  RT_SKIP_WITHOUT_GPU();
  auto gpu = test::gpu_backend(DType::f32);
  auto comm = one_rank_nccl(*gpu);
  constexpr int64_t kCount = int64_t{1} << 26;  // 256 MiB: each kernel runs ~0.1 ms
  Tensor dev = gpu->zeros({kCount}, DType::f32), host = Tensor::zeros({kCount}, DType::f32);
  for (int round = 1; round <= 10; ++round) {
    const double value = round;
    gpu->fill(dev, value);
    for (int k = 0; k < 20; ++k) {
      gpu->scale(dev, 2.0);
      gpu->scale(dev, 0.5);
    }
    comm->wait(comm->all_reduce_async(dev, 0, kCount, ReduceOp::average));
    gpu->copy(dev, host);
    int64_t wrong = 0;
    for (int64_t i = 0; i < kCount; ++i) wrong += host.data<float>()[i] != value;
    ASSERT_EQ(wrong, 0) << "round " << round << ": elements the all-reduce wrote too early";
  }
}

TEST(NcclOneRank, RefusesTheMpiCollectiveCheck) {
  RT_SKIP_WITHOUT_GPU();
  auto gpu = test::gpu_backend(DType::f32);
  EXPECT_THROW(make_nccl_communicator(make_nccl_unique_id(), 0, 1, *gpu, CommOptions{60, true}),
               Error);
}

// The gradients of one forward_backward of a ResNet-18 (width 0.25) on a fixed batch.
struct GradientRun {
  Tensor grads;        // host f32, the whole flat gradient buffer
  size_t buckets = 0;  // DDP's buckets (0 without DDP)
  int launched_in_backward = 0;
};

GradientRun gradients(Backend& gpu, Communicator* comm, bool sync_bn = false) {
  ResNetConfig config;
  config.depth = 18;
  config.width = 0.25;
  ResNet model(config, gpu, DType::f32, 5);
  if (sync_bn) model.set_sync_batch_norm(comm);
  std::unique_ptr<DistributedDataParallel> ddp;
  // Small buckets: several of them, most launched while backward still runs.
  if (comm)
    ddp = std::make_unique<DistributedDataParallel>(model.parameters(), *comm, gpu,
                                                    DdpConfig{0.2, 0.05, true});
  if (ddp) ddp->broadcast_state();
  std::mt19937_64 rng(17);
  const Tensor images = upload(gpu, random_f32({8, 3, 16, 16}, rng), DType::f32);
  Tensor labels = Tensor::zeros({8}, DType::i32);
  for (int i = 0; i < 8; ++i) labels.data<int>()[i] = (3 * i) % 10;
  Tensor labels_dev = gpu.zeros({8}, DType::i32);
  gpu.copy(labels, labels_dev);
  model.parameters().zero_grad(gpu);
  forward_backward(model, images, labels_dev, LossSettings{});
  GradientRun run;
  if (ddp) {
    ddp->finish_gradients();
    run.buckets = ddp->buckets().size();
    for (const auto& b : ddp->buckets()) run.launched_in_backward += b.launched_during_backward;
  }
  run.grads = download(gpu, model.parameters().flat_grads());
  return run;
}

TEST(NcclOneRank, DdpBucketedOverlapGivesTheSingleProcessGradients) {
  RT_SKIP_WITHOUT_GPU();
  auto gpu = test::gpu_backend(DType::f32, true);
  auto comm = one_rank_nccl(*gpu);
  const GradientRun want = gradients(*gpu, nullptr);
  const GradientRun got = gradients(*gpu, comm.get());
  EXPECT_GT(got.buckets, 2u);
  EXPECT_GT(got.launched_in_backward, 1);
  // Deterministic algorithms; the batch-norm sums add in f64 with atomics, whose order may
  // differ between the runs: equal within f32 rounding.
  EXPECT_LE(test::max_rel_diff(got.grads, want.grads), 1e-6);
}

// SyncBatchNorm's all-reduces (one per layer, forward and backward) are ordered on the device
// (wait_on_device), not waited for by the host: on one rank the step is the plain one.
TEST(NcclOneRank, SyncBatchNormGivesTheSingleProcessGradients) {
  RT_SKIP_WITHOUT_GPU();
  auto gpu = test::gpu_backend(DType::f32, true);
  auto comm = one_rank_nccl(*gpu);
  const GradientRun want = gradients(*gpu, nullptr);
  const GradientRun got = gradients(*gpu, comm.get(), true);
  EXPECT_LE(test::max_rel_diff(got.grads, want.grads), 1e-6);
}

}  // namespace
}  // namespace ringtrain
