// DDP against one process: a model whose samples are independent (conv, global average pool,
// linear; no batch norm), trained for three steps on each rank's own batch, must end with the
// parameters of one process trained on all ranks' batches concatenated.
#include <gtest/gtest.h>

#include <random>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/distributed/mpi_communicator.hpp"
#include "ringtrain/distributed/world.hpp"
#include "ringtrain/nn/conv2d.hpp"
#include "ringtrain/nn/linear.hpp"
#include "ringtrain/optim/make_optimizer.hpp"
#include "ringtrain/optim/sgd.hpp"
#include "ringtrain/parallel/ddp.hpp"
#include "shard_batch.hpp"

namespace ringtrain {
namespace {

constexpr int kPerRank = 3, kClasses = 4;

struct TinyNet {
  ParameterSet params;
  Conv2d conv;
  Linear fc;
  Tensor features, pooled, dpooled, dfeatures, logits, dlogits;

  TinyNet(Backend& backend, uint64_t seed)
      : conv(params, "conv", 3, 8, 3, 2, 1), fc(params, "fc", 8, kClasses) {
    params.allocate(backend, DType::f32);
    std::mt19937_64 rng(seed);
    conv.init(backend, rng);
    fc.init(backend, rng);
  }

  // Forward, loss and backward (adding to the gradients); returns the loss.
  double step(Backend& backend, const Tensor& x, const Tensor& labels, double grad_scale = 1.0) {
    const int n = static_cast<int>(x.dim(0));
    features = Tensor::zeros(conv.output_shape(x.shape()), DType::f32);
    pooled = Tensor::zeros({n, 8}, DType::f32);
    dpooled = Tensor::zeros({n, 8}, DType::f32);
    dfeatures = Tensor::zeros(features.shape(), DType::f32);
    logits = Tensor::zeros({n, kClasses}, DType::f32);
    dlogits = Tensor::zeros({n, kClasses}, DType::f32);
    conv.forward(backend, x, features);
    backend.global_avg_pool_forward(features, pooled);
    fc.forward(backend, pooled, logits);
    const double loss = backend.softmax_cross_entropy(logits, labels, 0.0f, &dlogits, 1.0);
    backend.scale(dlogits, grad_scale);
    fc.backward(backend, pooled, dlogits, &dpooled);
    backend.global_avg_pool_backward(dpooled, dfeatures);
    conv.backward(backend, x, dfeatures, nullptr);
    return loss;
  }
};

void fill_batch(int rank, int step, Tensor& x, Tensor& labels, int64_t row) {
  test::fill_shard(rank, step, kPerRank, kClasses, x, labels, row);
}

// Three steps of `kind` with DDP on each rank's batch against one process on all ranks'
// batches concatenated.
void expect_ddp_equals_one_process(OptimizerKind kind) {
  World& world = World::get();
  MpiCommunicator comm(world.comm());
  CpuBackend backend(1);
  OptimizerConfig oc;
  oc.kind = kind;
  oc.weight_decay = 1e-3f;

  // Rank 0 starts from other weights: broadcast_state must replace everyone's with rank 0's.
  TinyNet net(backend, comm.rank() == 0 ? 5 : 99);
  DdpConfig dc;
  dc.bucket_cap_mb = dc.first_bucket_mb = 0.0005;  // 500 bytes: fc, then conv, in two buckets
  DistributedDataParallel ddp(net.params, comm, backend, dc);
  ASSERT_EQ(ddp.buckets().size(), 2u);
  ddp.broadcast_state();
  const auto optimizer = make_optimizer(oc, net.params, backend);

  TinyNet ref(backend, 5);
  const auto ref_optimizer = make_optimizer(oc, ref.params, backend);

  for (int step = 0; step < 3; ++step) {
    Tensor x = Tensor::zeros({kPerRank, 3, 6, 6}, DType::f32);
    Tensor labels = Tensor::zeros({kPerRank}, DType::i32);
    fill_batch(comm.rank(), step, x, labels, 0);
    net.params.zero_grad(backend);
    net.step(backend, x, labels);
    ddp.finish_gradients();

    const int all = kPerRank * comm.size();
    Tensor X = Tensor::zeros({all, 3, 6, 6}, DType::f32);
    Tensor L = Tensor::zeros({all}, DType::i32);
    for (int r = 0; r < comm.size(); ++r) fill_batch(r, step, X, L, int64_t{r} * kPerRank);
    ref.params.zero_grad(backend);
    ref.step(backend, X, L);
    // The all-reduced gradients themselves, before the update: AdamW's update is the same for
    // gradients summed over the ranks instead of averaged, so the weights alone cannot tell.
    const float* g = net.params.flat_grads().data<float>();
    const float* want = ref.params.flat_grads().data<float>();
    for (int64_t i = 0; i < net.params.flat_size(); ++i)
      ASSERT_NEAR(g[i], want[i], 1e-5 * std::max(1.0f, std::abs(want[i])))
          << "gradient element " << i << " at step " << step;
    optimizer->step(0.1f);
    ref_optimizer->step(0.1f);
  }
  // The fc bucket was all-reduced while the conv's backward had not run yet.
  EXPECT_TRUE(ddp.buckets()[0].launched_during_backward);
  const float* a = net.params.flat_params().data<float>();
  const float* b = ref.params.flat_params().data<float>();
  for (int64_t i = 0; i < net.params.flat_size(); ++i)
    ASSERT_NEAR(a[i], b[i], 1e-5 * std::max(1.0f, std::abs(b[i]))) << "parameter element " << i;
}

// Every optimizer --optimizer accepts.
TEST(Ddp, EqualsOneProcessOnTheConcatenatedBatchWithEveryOptimizer) {
  for (const auto& [name, kind] : names_of<OptimizerKind>()) {
    SCOPED_TRACE("--optimizer " + name);
    expect_ddp_equals_one_process(kind);
  }
}

// Two micro-batches per step on every rank, accumulated, communicated once: one process on
// all ranks' micro-batches concatenated must end with the same parameters.
TEST(Ddp, GradientAccumulationEqualsOneProcessOnAllMicroBatches) {
  World& world = World::get();
  MpiCommunicator comm(world.comm());
  CpuBackend backend(1);
  OptimizerConfig sc;
  TinyNet net(backend, 5);
  DdpConfig dc;
  dc.bucket_cap_mb = dc.first_bucket_mb = 0.0005;
  DistributedDataParallel ddp(net.params, comm, backend, dc);
  Sgd sgd(net.params, backend, sc);
  TinyNet ref(backend, 5);
  Sgd ref_sgd(ref.params, backend, sc);
  for (int step = 0; step < 2; ++step) {
    net.params.zero_grad(backend);
    for (int micro = 0; micro < 2; ++micro) {
      Tensor x = Tensor::zeros({kPerRank, 3, 6, 6}, DType::f32);
      Tensor labels = Tensor::zeros({kPerRank}, DType::i32);
      fill_batch(2 * comm.rank() + micro, step, x, labels, 0);
      ddp.set_sync(micro == 1);
      net.step(backend, x, labels, 0.5);
      ddp.finish_gradients();
    }
    EXPECT_TRUE(ddp.buckets()[0].launched_during_backward);
    sgd.step(0.1f);

    const int shards = 2 * comm.size();
    Tensor X = Tensor::zeros({shards * kPerRank, 3, 6, 6}, DType::f32);
    Tensor L = Tensor::zeros({shards * kPerRank}, DType::i32);
    for (int s = 0; s < shards; ++s) fill_batch(s, step, X, L, int64_t{s} * kPerRank);
    ref.params.zero_grad(backend);
    ref.step(backend, X, L);
    ref_sgd.step(0.1f);
  }
  const float* a = net.params.flat_params().data<float>();
  const float* b = ref.params.flat_params().data<float>();
  for (int64_t i = 0; i < net.params.flat_size(); ++i)
    ASSERT_NEAR(a[i], b[i], 1e-5 * std::max(1.0f, std::abs(b[i]))) << "parameter element " << i;
}

// A rank with another model (here: the last rank's fc has one class more) is refused on every
// rank before any all-reduce, naming that rank's parameters and the remedy.
TEST(Ddp, RefusesRanksWithDifferentModels) {
  World& world = World::get();
  MpiCommunicator comm(world.comm());
  if (comm.size() < 2) GTEST_SKIP() << "needs two ranks";
  CpuBackend backend(1);
  const bool odd_one = comm.rank() == comm.size() - 1;
  ParameterSet params;
  Linear fc(params, "fc", 8, odd_one ? kClasses + 1 : kClasses);
  params.allocate(backend, DType::f32);
  try {
    DistributedDataParallel ddp(params, comm, backend, DdpConfig{});
    ADD_FAILURE() << "rank " << comm.rank() << ": different models were accepted";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("different models"), std::string::npos) << what;
    EXPECT_NE(what.find(odd_one ? "fc.weight [5,8]" : "fc.weight [4,8]"), std::string::npos)
        << what;
    EXPECT_NE(what.find("--width"), std::string::npos) << what;
  }
  TinyNet same(backend, 5);  // the same model everywhere is accepted
  EXPECT_NO_THROW(DistributedDataParallel(same.params, comm, backend, DdpConfig{}));
}

TEST(Ddp, WithoutOverlapEveryBucketWaitsForTheEndOfBackward) {
  World& world = World::get();
  MpiCommunicator comm(world.comm());
  CpuBackend backend(1);
  TinyNet net(backend, 5);
  DdpConfig dc;
  dc.overlap = false;
  DistributedDataParallel ddp(net.params, comm, backend, dc);
  ASSERT_EQ(ddp.buckets().size(), 1u);  // 25 MB holds the whole tiny model
  Tensor x = Tensor::zeros({kPerRank, 3, 6, 6}, DType::f32);
  Tensor labels = Tensor::zeros({kPerRank}, DType::i32);
  fill_batch(comm.rank(), 0, x, labels, 0);
  net.step(backend, x, labels);
  ddp.finish_gradients();
  EXPECT_FALSE(ddp.buckets()[0].launched_during_backward);
}

}  // namespace
}  // namespace ringtrain
