// HDF5 round trip, every bad input the reader must reject, the sampler and batch assembly.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "../support/bad_datasets.hpp"
#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/core/error.hpp"
#include "ringtrain/data/hdf5_io.hpp"
#include "ringtrain/data/synthetic.hpp"
#include "ringtrain/loader/augment.hpp"
#include "ringtrain/loader/loader.hpp"
#include "ringtrain/loader/sampler.hpp"
#include "ringtrain/loader/streaming_loader.hpp"
#include "test_util.hpp"

namespace ringtrain {
namespace {

using test::temp_path;

TEST(Hdf5, RoundTripKeepsPixelsLabelsAndClassNames) {
  SynthConfig c;
  c.train_count = 50;
  c.test_count = 20;
  c.height = 6;
  c.width = 5;
  c.channels = 1;
  c.classes = 4;
  const Dataset d = make_synthetic(c);
  const std::string path = temp_path("roundtrip.h5");
  write_hdf5_dataset(path, d, 4);
  const Dataset r = read_hdf5_dataset(path);
  EXPECT_EQ(r.train.images, d.train.images);
  EXPECT_EQ(r.train.labels, d.train.labels);
  EXPECT_EQ(r.test.images, d.test.images);
  EXPECT_EQ(r.test.labels, d.test.labels);
  EXPECT_EQ(r.class_names, d.class_names);
  EXPECT_EQ(r.train.height, 6);
  EXPECT_EQ(r.train.width, 5);
  EXPECT_EQ(r.train.channels, 1);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(Hdf5, MissingFileIsNamed) {
  try {
    read_hdf5_dataset("/nonexistent/cifar.h5");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "data: /nonexistent/cifar.h5: no such file");
  }
}

class BadInput : public ::testing::TestWithParam<test::BadDatasetCase> {};

TEST_P(BadInput, IsRejectedWithTheFileAndDatasetNamed) {
  const auto c = GetParam();
  const std::string path = temp_path(c.name + ".h5");
  test::write_bad_dataset(path, c.kind);
  try {
    read_hdf5_dataset(path);
    FAIL() << c.name << " was accepted";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.expected_message), std::string::npos) << msg;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, BadInput, ::testing::ValuesIn(test::bad_dataset_cases()),
                         [](const auto& info) { return info.param.name; });

TEST(Sampler, ShardsAreDisjointAndCoverTheDataset) {
  const int64_t n = 103;
  for (int world = 1; world <= 8; ++world) {
    std::multiset<int64_t> seen;
    for (int r = 0; r < world; ++r) {
      DistributedSampler s(n, world, r, true, ShardTail::pad, 5);
      s.set_epoch(2);
      const auto idx = s.indices();
      EXPECT_EQ(static_cast<int64_t>(idx.size()), (n + world - 1) / world);
      seen.insert(idx.begin(), idx.end());
    }
    for (int64_t i = 0; i < n; ++i) EXPECT_GE(seen.count(i), 1u) << "world " << world;
    // Padding repeats exactly the wrap-around samples.
    EXPECT_EQ(static_cast<int64_t>(seen.size()), (n + world - 1) / world * world);
  }
}

TEST(Sampler, EpochsReorderAndSeedsRepeat) {
  DistributedSampler a(1000, 2, 1, true, ShardTail::drop, 9),
      b(1000, 2, 1, true, ShardTail::drop, 9);
  a.set_epoch(0);
  b.set_epoch(0);
  EXPECT_EQ(a.indices(), b.indices());
  b.set_epoch(1);
  EXPECT_NE(a.indices(), b.indices());
  EXPECT_EQ(a.per_rank(), 500);
}

TEST(Sampler, EvaluationCountsEverySampleOnce) {
  for (int world : {1, 2, 3, 4, 6}) {
    std::multiset<int64_t> seen;
    for (int r = 0; r < world; ++r) {
      const auto idx = DistributedSampler(10000, world, r, false, ShardTail::uneven, 0).indices();
      seen.insert(idx.begin(), idx.end());
    }
    EXPECT_EQ(seen.size(), 10000u) << "world " << world;
    EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 10000u) << "world " << world;
  }
}

Dataset small_data(int channels = 3) {
  SynthConfig c;
  c.train_count = 100;
  c.test_count = 2;
  c.height = 8;
  c.width = 6;
  c.channels = channels;
  return make_synthetic(c);
}

// The augmentation applied directly: pad with zeros, crop at (dy, dx), mirror, normalise.
float reference_pixel(const Split& s, const Normalization& n, int64_t index, Crop crop, int pad,
                      int c, int y, int x) {
  const int sx0 = crop.flip ? s.width - 1 - x : x;
  const int sy = y + crop.dy - pad, sx = sx0 + crop.dx - pad;
  const bool inside = sy >= 0 && sy < s.height && sx >= 0 && sx < s.width;
  const int v = inside ? s.image(index)[(sy * s.width + sx) * s.channels + c] : 0;
  return (v / 255.0f - n.mean[c]) / n.std[c];
}

TEST(Augment, CropFlipAndNormaliseMatchTheDirectDefinition) {
  const Dataset d = small_data();
  const Normalization norm = channel_statistics(d.train);
  const ImageTransform nchw(d.train, norm, 4, DType::f32, Layout::nchw);
  const ImageTransform nhwc(d.train, norm, 4, DType::f32, Layout::nhwc);
  std::vector<float> a(nchw.image_elements()), b(nhwc.image_elements());
  int flips = 0, shifted = 0;
  for (int64_t i = 0; i < 40; ++i) {
    const Crop crop = draw_crop(3, 1, i, 4, true);
    ASSERT_GE(crop.dy, 0);
    ASSERT_LE(crop.dy, 8);
    ASSERT_LE(crop.dx, 8);
    flips += crop.flip;
    shifted += crop.dy != 4 || crop.dx != 4;
    nchw.write(i, crop, a.data());
    nhwc.write(i, crop, b.data());
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < 8; ++y)
        for (int x = 0; x < 6; ++x) {
          const float ref = reference_pixel(d.train, norm, i, crop, 4, c, y, x);
          ASSERT_FLOAT_EQ(a[(c * 8 + y) * 6 + x], ref) << i << " " << c << " " << y << " " << x;
          ASSERT_FLOAT_EQ(b[(y * 6 + x) * 3 + c], ref);
        }
  }
  EXPECT_GT(flips, 5);  // both kinds of draw happen
  EXPECT_LT(flips, 35);
  EXPECT_GT(shifted, 30);
  const Crop none = draw_crop(3, 1, 7, 4, false);
  EXPECT_EQ(none.dy, 4);
  EXPECT_EQ(none.dx, 4);
  EXPECT_FALSE(none.flip);
}

TEST(Augment, NormalisedImagesHaveZeroMeanUnitStd) {
  const Dataset d = small_data();
  const Normalization norm = channel_statistics(d.train);
  const ImageTransform w(d.train, norm, 4, DType::f32, Layout::nchw);
  std::vector<float> img(w.image_elements());
  for (int c = 0; c < 3; ++c) {
    double s = 0, sq = 0;
    for (int64_t i = 0; i < d.train.count; ++i) {
      w.write(i, draw_crop(0, 0, i, 4, false), img.data());
      for (int p = 0; p < 48; ++p) {
        s += img[c * 48 + p];
        sq += double(img[c * 48 + p]) * img[c * 48 + p];
      }
    }
    const double count = 48.0 * d.train.count;
    EXPECT_NEAR(s / count, 0.0, 1e-4);
    EXPECT_NEAR(sq / count, 1.0, 1e-3);
  }
}

// Every batch of two epochs, as bytes, for one loader setting.
std::vector<std::vector<uint8_t>> all_batches(const Dataset& d, int workers, int prefetch,
                                              bool persistent, DType dtype, Layout layout) {
  CpuBackend backend(1);
  const Normalization norm = channel_statistics(d.train);
  const ImageTransform writer(d.train, norm, 4, dtype, layout);
  LoaderConfig c;
  c.batch_size = 16;
  c.workers = workers;
  c.prefetch_factor = prefetch;
  c.persistent_workers = persistent;
  c.drop_last = false;
  c.seed = 7;
  Loader loader(d.train, writer, DistributedSampler(d.train.count, 1, 0, true, ShardTail::pad, 7),
                c, backend);
  std::vector<std::vector<uint8_t>> out;
  for (int epoch = 0; epoch < 2; ++epoch) {
    loader.start_epoch(epoch);
    int64_t expected = 0;
    while (const HostBatch* b = loader.next()) {
      EXPECT_EQ(b->index, expected++);
      const auto* img = static_cast<const uint8_t*>(b->images.raw());
      const auto* lab = static_cast<const uint8_t*>(b->labels.raw());
      std::vector<uint8_t> bytes(img, img + b->images.nbytes());
      bytes.insert(bytes.end(), lab, lab + b->labels.nbytes());
      out.push_back(std::move(bytes));
    }
    EXPECT_EQ(expected, loader.batches_per_epoch());
  }
  return out;
}

TEST(Loader, BatchesAreIdenticalForAnyWorkerCountAndPrefetchDepth) {
  const Dataset d = small_data();
  const auto reference = all_batches(d, 0, 1, false, DType::f32, Layout::nchw);
  ASSERT_EQ(reference.size(), 14u);  // 100 samples in batches of 16, last one partial, 2 epochs
  EXPECT_NE(reference[0], reference[7]);  // epochs differ
  for (int workers : {1, 2, 4})
    for (int prefetch : {1, 2, 4})
      for (bool persistent : {false, true})
        EXPECT_EQ(all_batches(d, workers, prefetch, persistent, DType::f32, Layout::nchw),
                  reference)
            << workers << " workers, prefetch " << prefetch << ", persistent " << persistent;
}

TEST(Loader, HalfPrecisionNhwcBatchesAreIdenticalForAnyWorkerCount) {
  const Dataset d = small_data(1);
  for (DType t : {DType::bf16, DType::f16})
    EXPECT_EQ(all_batches(d, 3, 2, false, t, Layout::nhwc),
              all_batches(d, 0, 1, false, t, Layout::nhwc));
}

TEST(Loader, AbandonedEpochRestartsCleanly) {
  const Dataset d = small_data();
  CpuBackend backend(1);
  const Normalization norm = channel_statistics(d.train);
  const ImageTransform writer(d.train, norm, 4, DType::f32, Layout::nchw);
  LoaderConfig c;
  c.batch_size = 10;
  c.workers = 2;
  c.persistent_workers = true;
  Loader loader(d.train, writer, DistributedSampler(d.train.count, 1, 0, true, ShardTail::drop, 0),
                c, backend);
  loader.start_epoch(0);
  ASSERT_NE(loader.next(), nullptr);
  loader.start_epoch(1);  // three batches of epoch 0 never taken
  int batches = 0;
  while (loader.next()) ++batches;
  EXPECT_EQ(batches, 10);
}

// A 300-image file streamed in windows of 64: every batch image is one of the file's images,
// with its label, none twice in an epoch, never more than one window in memory.
struct StreamCase {
  std::string path;
  Dataset full;  // read into memory, for reference
  Dataset meta;  // train images left on disk
};

StreamCase stream_case() {
  SynthConfig c;
  c.train_count = 300;
  c.test_count = 4;
  c.height = 8;
  c.width = 6;
  StreamCase s;
  s.path = temp_path(std::string("stream_") +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".h5");
  write_hdf5_dataset(s.path, make_synthetic(c));
  s.full = read_hdf5_dataset(s.path);
  s.meta = read_hdf5_dataset(s.path, 1000);
  return s;
}

std::vector<std::vector<int64_t>> streamed_samples(const StreamCase& sc, int world, int rank,
                                                   int workers, int64_t epoch) {
  CpuBackend backend(1);
  const Normalization norm = channel_statistics(sc.full.train);
  const ImageTransform reference(sc.full.train, norm, 4, DType::f32, Layout::nchw);
  std::map<std::vector<float>, int64_t> index_of;
  std::vector<float> img(reference.image_elements());
  for (int64_t i = 0; i < sc.full.train.count; ++i) {
    reference.write(i, draw_crop(0, 0, i, 4, false), img.data());
    index_of[img] = i;
  }
  LoaderConfig c;
  c.batch_size = 8;
  c.workers = workers;
  c.augment = false;
  c.seed = 3;
  StreamingLoader loader(sc.path, "train", sc.meta.train, 64, norm, DType::f32, Layout::nchw, world,
                         rank, c, backend);
  EXPECT_EQ(loader.windows(), 5);
  loader.start_epoch(epoch);
  std::vector<std::vector<int64_t>> batches;
  while (const HostBatch* b = loader.next()) {
    EXPECT_LE(loader.resident_images(), 64);
    std::vector<int64_t> samples;
    for (int64_t i = 0; i < b->images.dim(0); ++i) {
      const float* p = b->images.data<float>() + i * reference.image_elements();
      const auto it = index_of.find(std::vector<float>(p, p + reference.image_elements()));
      EXPECT_NE(it, index_of.end()) << "batch image is none of the file's images";
      if (it == index_of.end()) continue;
      EXPECT_EQ(b->labels.data<int32_t>()[i], sc.full.train.labels[it->second]);
      samples.push_back(it->second);
    }
    batches.push_back(samples);
  }
  EXPECT_EQ(static_cast<int64_t>(batches.size()), loader.batches_per_epoch());
  return batches;
}

TEST(StreamingLoader, StreamsEverySampleAtMostOnceWithItsLabel) {
  const StreamCase sc = stream_case();
  ASSERT_TRUE(sc.meta.train.images.empty());
  ASSERT_EQ(sc.meta.train.labels, sc.full.train.labels);
  const auto epoch0 = streamed_samples(sc, 1, 0, 0, 0);
  ASSERT_EQ(epoch0.size(), 37u);  // windows of 64, 64, 64, 64, 44: 8 + 8 + 8 + 8 + 5 batches
  std::set<int64_t> seen;
  for (const auto& b : epoch0) seen.insert(b.begin(), b.end());
  EXPECT_EQ(seen.size(), 37u * 8);
  EXPECT_EQ(streamed_samples(sc, 1, 0, 2, 0), epoch0);  // any worker count, same batches
  EXPECT_NE(streamed_samples(sc, 1, 0, 0, 1), epoch0);  // another epoch, another order
}

TEST(StreamingLoader, RanksGetDisjointShardsOfEachWindow) {
  const StreamCase sc = stream_case();
  std::set<int64_t> all;
  size_t total = 0;
  for (int rank = 0; rank < 2; ++rank)
    for (const auto& b : streamed_samples(sc, 2, rank, 1, 0)) {
      all.insert(b.begin(), b.end());
      total += b.size();
    }
  EXPECT_EQ(all.size(), total);
  EXPECT_EQ(total, 2u * 8 * (4 + 4 + 4 + 4 + 2));
}

// Traced, every window's Loader times its batches: the lanes hold each batch handed out once,
// on the lane of the worker that built it, over windows and epochs.
TEST(StreamingLoader, TracesTheBatchesOfEveryWindow) {
  const StreamCase sc = stream_case();
  CpuBackend backend(1);
  LoaderConfig c;
  c.batch_size = 8;
  c.workers = 2;
  c.augment = false;
  StreamingLoader loader(sc.path, "train", sc.meta.train, 64, channel_statistics(sc.full.train),
                         DType::f32, Layout::nchw, 1, 0, c, backend);
  const HostClock clock;
  loader.trace_batches(clock);
  for (int epoch = 0; epoch < 2; ++epoch) {
    loader.start_epoch(epoch);
    while (loader.next()) {
    }
  }
  const std::vector<BatchLane> lanes = loader.batch_lanes();
  ASSERT_EQ(lanes.size(), 2u);
  size_t spans = 0;
  for (const BatchLane& lane : lanes) {
    spans += lane.spans.size();
    for (const BatchSpan& s : lane.spans) {
      EXPECT_EQ(s.batch % 2, lane.worker);
      EXPECT_GE(s.duration_s, 0.0);
    }
  }
  EXPECT_EQ(spans, 2u * 37);  // two epochs of 37 batches (see above)
}

TEST(StreamingLoader, StatisticsMatchTheInMemoryOnes) {
  const StreamCase sc = stream_case();
  const Normalization a = channel_statistics(sc.full.train);
  const Normalization b = StreamingLoader::statistics(sc.path, "train", sc.meta.train, 64);
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(a.mean[c], b.mean[c], 1e-6);
    EXPECT_NEAR(a.std[c], b.std[c], 1e-6);
  }
}

}  // namespace
}  // namespace ringtrain
