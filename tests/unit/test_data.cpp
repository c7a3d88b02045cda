// HDF5 round trip, every bad input the reader must reject, the sampler and batch assembly.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "../support/bad_datasets.hpp"
#include "ringtrain/core/error.hpp"
#include "ringtrain/data/batch.hpp"
#include "ringtrain/data/hdf5_io.hpp"
#include "ringtrain/data/sampler.hpp"
#include "ringtrain/data/synthetic.hpp"

namespace ringtrain {
namespace {

std::string temp_path(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / "ringtrain_test_data";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

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
      DistributedSampler s(n, world, r, true, false, 5);
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
  DistributedSampler a(1000, 2, 1, true, true, 9), b(1000, 2, 1, true, true, 9);
  a.set_epoch(0);
  b.set_epoch(0);
  EXPECT_EQ(a.indices(), b.indices());
  b.set_epoch(1);
  EXPECT_NE(a.indices(), b.indices());
  EXPECT_EQ(a.per_rank(), 500);
}

TEST(Batch, NormalisedToZeroMeanUnitStd) {
  SynthConfig c;
  c.train_count = 64;
  c.test_count = 2;
  c.height = c.width = 8;
  const Dataset d = make_synthetic(c);
  const Normalization norm = channel_statistics(d.train);
  std::vector<int64_t> idx(64);
  for (int i = 0; i < 64; ++i) idx[i] = i;
  std::vector<float> images(64 * 3 * 64);
  std::vector<int32_t> labels(64);
  assemble_batch(d.train, idx.data(), 64, norm, images.data(), labels.data());
  for (int ch = 0; ch < 3; ++ch) {
    double s = 0, sq = 0;
    for (int i = 0; i < 64; ++i)
      for (int p = 0; p < 64; ++p) {
        const double v = images[(i * 3 + ch) * 64 + p];
        s += v;
        sq += v * v;
      }
    EXPECT_NEAR(s / 4096, 0.0, 1e-4);
    EXPECT_NEAR(sq / 4096, 1.0, 1e-3);
  }
  EXPECT_EQ(labels[5], d.train.labels[5]);
  // Pixel (y=2, x=3, c=1) of image 7 lands at NCHW [7,1,2,3].
  const float expect =
      (d.train.image(7)[(2 * 8 + 3) * 3 + 1] / 255.0f - norm.mean[1]) / norm.std[1];
  EXPECT_NEAR(images[(7 * 3 + 1) * 64 + 2 * 8 + 3], expect, 1e-5);
}

}  // namespace
}  // namespace ringtrain
