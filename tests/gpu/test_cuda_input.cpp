// The asynchronous input path on the GPU: loader threads filling pinned host buffers, the
// DevicePrefetcher's copies on the copy stream, and the augmentation on the device. Two epochs
// of batches, each one bit for bit what the synchronous loader writes on the host. Skipped,
// with the reason, where there is no GPU.
#include <cstring>

#include "gpu_test_util.hpp"
#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/data/augment.hpp"
#include "ringtrain/data/device_prefetcher.hpp"
#include "ringtrain/data/loader.hpp"
#include "ringtrain/data/synthetic.hpp"

namespace ringtrain {
namespace {

constexpr int kPad = 4;

Dataset small_data() {
  SynthConfig c;
  c.train_count = 90;
  c.test_count = 2;
  c.height = 7;
  c.width = 6;
  return make_synthetic(c);
}

std::vector<uint8_t> bytes_of(const Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.raw());
  return {p, p + t.nbytes()};
}

// How the batches are made: on which backend, whether augmented on the device, loader threads.
struct InputPath {
  Backend& backend;
  bool on_device;
  int workers;
};

// Every prefetched batch of two epochs as host bytes: the images as f32 NCHW, then the labels.
std::vector<std::vector<uint8_t>> prefetched_batches(const Dataset& d, const InputPath& path) {
  Backend& backend = path.backend;
  const Normalization norm = channel_statistics(d.train);
  const ImageWriter writer(d.train, norm, kPad, path.on_device ? DType::u8 : DType::f32,
                           path.on_device ? Layout::nhwc : backend.layout());
  LoaderConfig c;
  c.batch_size = 16;
  c.workers = path.workers;
  c.drop_last = false;  // the last batch is partial
  c.seed = 5;
  Loader loader(d.train, writer, DistributedSampler(d.train.count, 1, 0, true, ShardTail::pad, 5),
                c, backend);
  const DeviceAugment augment =
      path.on_device ? make_device_augment(norm, kPad, backend) : DeviceAugment{};
  DevicePrefetcher prefetcher(loader, backend, nullptr, augment);
  std::vector<std::vector<uint8_t>> out;
  for (int epoch = 0; epoch < 2; ++epoch) {
    prefetcher.start_epoch(epoch);
    while (const DeviceBatch* b = prefetcher.next()) {
      Tensor images = Tensor::zeros(b->images.shape(), DType::f32);
      Tensor labels = Tensor::zeros(b->labels.shape(), DType::i32);
      backend.copy(b->images, images);
      backend.copy(b->labels, labels);
      std::vector<uint8_t> bytes = bytes_of(images);
      const std::vector<uint8_t> label_bytes = bytes_of(labels);
      bytes.insert(bytes.end(), label_bytes.begin(), label_bytes.end());
      out.push_back(std::move(bytes));
    }
  }
  return out;
}

TEST(CudaInput, PrefetchedBatchesEqualTheSynchronousHostLoaders) {
  RT_SKIP_WITHOUT_GPU();
  const Dataset d = small_data();
  CpuBackend cpu(1);
  const auto reference = prefetched_batches(d, {cpu, false, 0});
  ASSERT_EQ(reference.size(), 12u);  // 90 samples in batches of 16, the last one partial
  auto gpu = test::gpu_backend(DType::f32);
  for (const bool on_device : {false, true}) {
    for (const int workers : {0, 2}) {
      SCOPED_TRACE(testing::Message() << (on_device ? "augmented on the GPU" : "on the host")
                                      << ", " << workers << " loader threads");
      const auto got = prefetched_batches(d, {*gpu, on_device, workers});
      ASSERT_EQ(got.size(), reference.size());
      for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i] == reference[i]) << "batch " << i;
    }
  }
}

}  // namespace
}  // namespace ringtrain
