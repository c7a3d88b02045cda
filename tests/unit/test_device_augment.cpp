// Augmentation on the device (--augment-on device): the loader gathers uint8 images and their
// crops, Backend::augment pads, crops, flips and normalises them after the copy. Here on the
// CPU backend: the op, the mapping the CUDA kernel uses, and whole epochs of prefetched batches
// all equal what the loader's threads write; the CUDA kernel is checked in tests/gpu.
#include <gtest/gtest.h>

#include <cstring>

#include "../support/prefetched_batches.hpp"
#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/backend/crop.hpp"
#include "ringtrain/data/synthetic.hpp"
#include "ringtrain/loader/augment.hpp"
#include "ringtrain/loader/device_prefetcher.hpp"
#include "ringtrain/loader/loader.hpp"

namespace ringtrain {
namespace {

using test::bytes_of;
constexpr int kPad = test::kAugmentPad;

// Every crop a draw can give: offsets 0..2*pad in both directions, mirrored or not.
std::vector<Crop> every_crop() {
  std::vector<Crop> crops;
  for (int dy = 0; dy <= 2 * kPad; ++dy)
    for (int dx = 0; dx <= 2 * kPad; ++dx)
      for (bool flip : {false, true}) crops.push_back({dy, dx, flip});
  return crops;
}

// A batch of the split's first images as the device receives it: raw uint8 NHWC and crops.
struct RawBatch {
  Tensor raw, crops;
};
RawBatch raw_batch(const Split& s, const std::vector<Crop>& crops) {
  const auto n = static_cast<int64_t>(crops.size());
  RawBatch b{Tensor::zeros({n, s.channels, s.height, s.width}, DType::u8, Layout::nhwc),
             Tensor::zeros({n, 3}, DType::i32)};
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(b.raw.data<uint8_t>() + i * s.image_bytes(), s.image(i % s.count), s.image_bytes());
    const Crop& c = crops[static_cast<size_t>(i)];
    int32_t* draw = b.crops.data<int32_t>() + 3 * i;
    draw[0] = c.dy, draw[1] = c.dx, draw[2] = c.flip;
  }
  return b;
}

TEST(DeviceAugment, CpuOpWritesWhatTheLoaderThreadsWrite) {
  const Dataset d = test::small_image_data();
  const Normalization norm = channel_statistics(d.train);
  const std::vector<float> table = normalization_table(norm);
  const Tensor table_t = Tensor::view(const_cast<float*>(table.data()),
                                      {static_cast<int64_t>(table.size())}, DType::f32);
  const std::vector<Crop> crops = every_crop();
  const RawBatch b = raw_batch(d.train, crops);
  CpuBackend backend(2);
  for (auto [dtype, layout] : {std::pair{DType::f32, Layout::nchw}, {DType::bf16, Layout::nhwc}}) {
    const ImageTransform writer(d.train, norm, kPad, dtype, layout);
    Tensor out = Tensor::zeros(b.raw.shape(), dtype, layout);
    backend.augment(b.raw, b.crops, table_t, kPad, out);
    Tensor want = Tensor::zeros(b.raw.shape(), dtype, layout);
    for (size_t i = 0; i < crops.size(); ++i)
      writer.write(static_cast<int64_t>(i) % d.train.count, crops[i],
                   static_cast<char*>(want.raw()) + i * writer.image_bytes());
    EXPECT_EQ(bytes_of(out), bytes_of(want)) << dtype_name(dtype);
  }
}

// The CUDA kernel computes each output value on its own through crop_source; the same mapping,
// value by value here, gives the host kernel's output for every crop.
TEST(DeviceAugment, PerValueMappingOfTheCudaKernelEqualsTheHostKernel) {
  const Dataset d = test::small_image_data();
  const Split& s = d.train;
  const std::vector<float> table = normalization_table(channel_statistics(s));
  const cpu::ImageDims dims{s.height, s.width, s.channels};
  std::vector<float> host(static_cast<size_t>(dims.elements()));
  int padded = 0;
  for (const Crop& crop : every_crop()) {
    cpu::augment_image(s.image(3), dims, crop, kPad, table.data(), DType::f32, Layout::nhwc,
                       host.data());
    for (int y = 0; y < s.height; ++y)
      for (int x = 0; x < s.width; ++x)
        for (int c = 0; c < s.channels; ++c) {
          int sy = 0, sx = 0;
          const bool inside = crop_source(crop, kPad, s.height, s.width, y, x, sy, sx);
          padded += !inside;
          const int v = inside ? s.image(3)[(sy * s.width + sx) * s.channels + c] : 0;
          ASSERT_EQ(host[static_cast<size_t>((y * s.width + x) * s.channels + c)],
                    table[static_cast<size_t>(c * 256 + v)])
              << "crop " << crop.dy << "," << crop.dx << (crop.flip ? " flipped" : "") << " at "
              << y << "," << x << "," << c;
        }
  }
  EXPECT_GT(padded, 0);  // the extreme crops reach into the padding
}

TEST(DeviceAugment, PrefetchedBatchesEqualTheLoaderAugmentedOnes) {
  const Dataset d = test::small_image_data();
  CpuBackend backend(2);
  const auto reference = test::prefetched_batches(d, {backend, false, 0});
  ASSERT_EQ(reference.size(), 12u);  // 90 samples in batches of 16, the last one partial
  EXPECT_LT(reference[5].size(), reference[4].size());
  for (int workers : {0, 2})
    EXPECT_EQ(test::prefetched_batches(d, {backend, true, workers}), reference) << workers;
}

TEST(DeviceAugment, RawBatchesCarryTheirCrops) {
  const Dataset d = test::small_image_data();
  CpuBackend backend(1);
  const ImageTransform writer(d.train, channel_statistics(d.train), kPad, DType::u8, Layout::nhwc);
  EXPECT_TRUE(writer.raw());
  LoaderConfig c;
  c.batch_size = 8;
  c.workers = 0;
  c.seed = 9;
  Loader loader(d.train, writer, DistributedSampler(d.train.count, 1, 0, true, ShardTail::drop, 9),
                c, backend);
  loader.start_epoch(3);
  const HostBatch* b = loader.next();
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(b->crops.shape(), (Shape{8, 3}));
  DistributedSampler sampler(d.train.count, 1, 0, true, ShardTail::drop, 9);
  sampler.set_epoch(3);
  for (int i = 0; i < 8; ++i) {
    const int64_t sample = sampler.indices()[static_cast<size_t>(i)];
    const Crop want = draw_crop(9, 3, sample, kPad, true);
    const int32_t* got = b->crops.data<int32_t>() + 3 * i;
    EXPECT_EQ(got[0], want.dy);
    EXPECT_EQ(got[1], want.dx);
    EXPECT_EQ(got[2], want.flip ? 1 : 0);
    EXPECT_EQ(std::memcmp(b->images.data<uint8_t>() + i * d.train.image_bytes(),
                          d.train.image(sample), d.train.image_bytes()),
              0);
  }
}

TEST(DeviceAugment, BadOperandsAreRejectedWithTheReason) {
  const Dataset d = test::small_image_data();
  CpuBackend backend(1);
  const auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] {
              ImageTransform(d.train, channel_statistics(d.train), 4, DType::u8, Layout::nchw);
            }).find("uint8 NHWC"),
            std::string::npos);
  const RawBatch b = raw_batch(d.train, {{0, 0, false}, {8, 8, true}});
  Tensor table = Tensor::zeros({3 * 256}, DType::f32),
         out = Tensor::zeros(b.raw.shape(), DType::f32);
  Tensor as_nchw = b.raw.with_layout(Layout::nchw);
  EXPECT_NE(message([&] { backend.augment(as_nchw, b.crops, table, 4, out); }).find("uint8 NHWC"),
            std::string::npos);
  Tensor short_table = Tensor::zeros({256}, DType::f32);
  EXPECT_NE(message([&] { backend.augment(b.raw, b.crops, short_table, 4, out); }).find("table"),
            std::string::npos);
  Tensor small_out = Tensor::zeros({1, 3, 7, 6}, DType::f32);
  EXPECT_NE(message([&] { backend.augment(b.raw, b.crops, table, 4, small_out); }).find("output"),
            std::string::npos);
  EXPECT_NE(message([&] { backend.augment(b.raw, b.crops, table, -1, out); }).find("padding"),
            std::string::npos);

  // A raw loader needs a table to augment with.
  const ImageTransform raw_writer(d.train, channel_statistics(d.train), 4, DType::u8, Layout::nhwc);
  LoaderConfig c;
  c.batch_size = 8;
  c.workers = 0;
  Loader loader(d.train, raw_writer,
                DistributedSampler(d.train.count, 1, 0, true, ShardTail::drop, 0), c, backend);
  DevicePrefetcher prefetcher(loader, backend);
  EXPECT_NE(message([&] { prefetcher.start_epoch(0); }).find("no table"), std::string::npos);
}

}  // namespace
}  // namespace ringtrain
