#pragma once
// Two epochs of a DevicePrefetcher's batches as host bytes, for the tests that compare input
// paths (the synchronous host loader against loader threads, pinned copies and augmentation on
// the device) on the CPU backend (tests/unit) and on a GPU (tests/gpu).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "ringtrain/data/synthetic.hpp"
#include "ringtrain/loader/augment.hpp"
#include "ringtrain/loader/device_prefetcher.hpp"
#include "ringtrain/loader/loader.hpp"

namespace ringtrain::test {

constexpr int kAugmentPad = 4;

// 90 synthetic training images of 7x6x3: batches of 16 leave the last one partial, and the
// odd sizes catch a mixed-up height and width.
inline Dataset small_image_data() {
  SynthConfig c;
  c.train_count = 90;
  c.test_count = 2;
  c.height = 7;
  c.width = 6;
  return make_synthetic(c);
}

inline std::vector<uint8_t> bytes_of(const Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.raw());
  return {p, p + t.nbytes()};
}

// How the batches are made: on which backend, augmented on the device or by the loader's
// threads, with how many loader threads (0: synchronous).
struct InputPath {
  Backend& backend;
  bool on_device;
  int workers;
};

// Every prefetched batch of two epochs: its images as host f32 NCHW bytes, then its labels.
inline std::vector<std::vector<uint8_t>> prefetched_batches(const Dataset& d,
                                                            const InputPath& path) {
  Backend& backend = path.backend;
  const Normalization norm = channel_statistics(d.train);
  const ImageTransform writer(d.train, norm, kAugmentPad, path.on_device ? DType::u8 : DType::f32,
                              path.on_device ? Layout::nhwc : backend.layout());
  LoaderConfig c;
  c.batch_size = 16;
  c.workers = path.workers;
  c.drop_last = false;  // the last batch is partial
  c.seed = 5;
  Loader loader(d.train, writer, DistributedSampler(d.train.count, 1, 0, true, ShardTail::pad, 5),
                c, backend);
  const DeviceAugment augment =
      path.on_device ? make_device_augment(norm, kAugmentPad, backend) : DeviceAugment{};
  DevicePrefetcher prefetcher(loader, backend, nullptr, augment);
  std::vector<std::vector<uint8_t>> out;
  for (int epoch = 0; epoch < 2; ++epoch) {
    prefetcher.start_epoch(epoch);
    while (const DeviceBatch* b = prefetcher.next()) {
      EXPECT_EQ(b->images.dtype(), DType::f32);
      EXPECT_EQ(b->images.layout(), backend.layout());
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

}  // namespace ringtrain::test
