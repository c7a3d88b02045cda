// The asynchronous input path on the GPU: loader threads filling pinned host buffers, the
// DevicePrefetcher's copies on the copy stream, and the augmentation on the device. Two epochs
// of batches, each one bit for bit what the synchronous loader writes on the host. Skipped,
// with the reason, where there is no GPU.
#include "../support/prefetched_batches.hpp"
#include "gpu_test_util.hpp"
#include "ringtrain/backend/cpu/cpu_backend.hpp"

namespace ringtrain {
namespace {

TEST(CudaInput, PrefetchedBatchesEqualTheSynchronousHostLoaders) {
  RT_SKIP_WITHOUT_GPU();
  const Dataset d = test::small_image_data();
  CpuBackend cpu(1);
  const auto reference = test::prefetched_batches(d, {cpu, false, 0});
  ASSERT_EQ(reference.size(), 12u);  // 90 samples in batches of 16, the last one partial
  auto gpu = test::gpu_backend(DType::f32);
  for (const bool on_device : {false, true}) {
    for (const int workers : {0, 2}) {
      SCOPED_TRACE(testing::Message() << (on_device ? "augmented on the GPU" : "on the host")
                                      << ", " << workers << " loader threads");
      const auto got = test::prefetched_batches(d, {*gpu, on_device, workers});
      ASSERT_EQ(got.size(), reference.size());
      for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i] == reference[i]) << "batch " << i;
    }
  }
}

}  // namespace
}  // namespace ringtrain
