// DataParallel on CUDA replicas against one CUDA model that runs the batch's chunks in turn:
// two replicas sharing one GPU (--dp-share-device, so that one GPU tests the multi-replica
// path) and two replicas on two GPUs; and copies between two GPUs. Skipped, saying why, without
// a GPU or, for the two-GPU tests, without a second one.
#include "../unit/dp_reference.hpp"
#include "gpu_test_util.hpp"

namespace ringtrain {
namespace {

using test::download;
using test::upload;

std::unique_ptr<Backend> f32_backend(int device) {
  CudaOptions o;
  o.device = device;
  o.compute = DType::f32;
  o.deterministic = true;
  return make_cuda_backend(o);
}

// Note: both sides are f32 on the GPU with the same deterministic cuDNN algorithms, and differ
// only in which stream and replica ran each chunk and the order the gradients were summed in.
// As in the single-GPU check against the CPU, a ReLU decision near zero may flip, so the whole
// gradient is held to 1e-3 relative L2 error rather than each element.
void check_dp_matches_chunks_in_turn(int devices, bool share_device) {
  ResNetConfig mc;
  mc.depth = 18;
  mc.width = 0.25;
  auto single = f32_backend(0);
  ResNet reference(mc, *single, DType::f32, 7);
  std::vector<std::unique_ptr<Backend>> backends;
  for (int d = 0; d < devices; ++d) backends.push_back(f32_backend(share_device ? 0 : d));
  DataParallel dp(mc, std::move(backends), 7);

  std::mt19937_64 rng(3);
  const Tensor host = test::random_f32({4 * devices, 3, 16, 16}, rng);
  Tensor host_labels = Tensor::zeros({4 * devices}, DType::i32);
  for (int64_t i = 0; i < host_labels.numel(); ++i)
    host_labels.data<int32_t>()[i] = static_cast<int32_t>(rng() % 10);
  const Tensor images = upload(*single, host, DType::f32);
  Tensor labels = single->zeros(host_labels.shape(), DType::i32);
  single->copy(host_labels, labels);

  reference.parameters().zero_grad(*single);
  dp.primary().parameters().zero_grad(dp.primary_backend());
  const BatchResult want = test::chunks_in_turn(reference, images, labels, devices);
  dp.step(images, labels, LossSettings{});
  const std::vector<LossValue> losses = dp.take_losses();
  ASSERT_EQ(losses.size(), 1u);
  const LossValue got = losses[0];
  EXPECT_NEAR(got.loss, want.loss, 1e-4 * want.loss);
  EXPECT_EQ(got.correct, want.correct);
  const Tensor got_grads = download(dp.primary_backend(), dp.primary().parameters().flat_grads());
  const Tensor want_grads = download(*single, reference.parameters().flat_grads());
  EXPECT_LE(test::relative_l2(got_grads, want_grads), 1e-3);
}

int visible_gpus() {
  return probe_devices().cuda_devices;
}

TEST(CudaDataParallel, TwoReplicasSharingOneGpuMatchOneModel) {
  RT_SKIP_WITHOUT_GPU();
  check_dp_matches_chunks_in_turn(2, true);
}

#define RT_SKIP_WITHOUT_TWO_GPUS()                                                   \
  do {                                                                               \
    RT_SKIP_WITHOUT_GPU();                                                           \
    if (visible_gpus() < 2)                                                          \
      GTEST_SKIP() << "needs 2 CUDA devices; " << visible_gpus() << " visible here"; \
  } while (0)

TEST(CudaDataParallel, TwoReplicasOnTwoGpusMatchOneModel) {
  RT_SKIP_WITHOUT_TWO_GPUS();
  check_dp_matches_chunks_in_turn(2, false);
}

// Device 0 to device 1 and back, on whichever path the pair has: the bytes arrive unchanged.
TEST(CudaDataParallel, CopiesBetweenTwoGpusArriveUnchanged) {
  RT_SKIP_WITHOUT_TWO_GPUS();
  const std::string path = enable_peer_access(0, 1);
  EXPECT_TRUE(path == "peer-to-peer" || path == "through host memory") << path;
  auto first = f32_backend(0), second = f32_backend(1);
  std::mt19937_64 rng(9);
  const Tensor host = test::random_f32({1 << 20}, rng);
  first->bind_thread();
  const Tensor on_first = upload(*first, host, DType::f32);
  second->bind_thread();
  Tensor on_second = second->zeros(host.shape(), DType::f32);
  second->copy(on_first, on_second);
  first->bind_thread();
  Tensor back = first->zeros(host.shape(), DType::f32);
  first->copy(on_second, back);
  const Tensor got = download(*first, back);
  for (int64_t i = 0; i < host.numel(); ++i)
    ASSERT_EQ(got.data<float>()[i], host.data<float>()[i]) << "element " << i << " via " << path;
}

}  // namespace
}  // namespace ringtrain
