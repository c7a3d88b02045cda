// Checkpoint integrity and resume arithmetic: the XXH64 checksum, the data fingerprint, the
// epoch position under another batch recipe, the sampler property that position rests on, and
// the errors for a checkpoint of another model.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>
#include <string>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/checkpoint/checkpoint.hpp"
#include "ringtrain/checkpoint/resume_position.hpp"
#include "ringtrain/core/hash.hpp"
#include "ringtrain/data/fingerprint.hpp"
#include "ringtrain/data/hdf5_io.hpp"
#include "ringtrain/data/synthetic.hpp"
#include "ringtrain/loader/sampler.hpp"
#include "ringtrain/nn/resnet.hpp"
#include "ringtrain/optim/sgd.hpp"
#include "test_util.hpp"

namespace ringtrain {
namespace {

using test::temp_path;

TEST(Xxh64, MatchesTheReferenceValues) {
  EXPECT_EQ(hex64(xxh64("", 0)), "ef46db3751d8e999");
  EXPECT_EQ(hex64(xxh64("abc", 3)), "44bc2cf5ad770999");
  const std::string long_text = "Nobody inspects the spammish repetition";  // the 32-byte loop
  EXPECT_EQ(hex64(xxh64(long_text.data(), long_text.size())), "fbcea83c8a378bf1");
}

TEST(Xxh64, AFlippedBitChangesIt) {
  std::vector<float> weights(1000, 0.25f);
  const uint64_t before = xxh64(weights.data(), weights.size() * sizeof(float));
  reinterpret_cast<unsigned char*>(weights.data())[1234] ^= 1;
  EXPECT_NE(xxh64(weights.data(), weights.size() * sizeof(float)), before);
}

// The fingerprint of the file at `path`, read as training reads it: in memory, or with the
// train images left on disk for streaming.
std::string fingerprint_of(const std::string& path, bool streamed = false) {
  return data_fingerprint(read_hdf5_dataset(path, streamed ? 0 : INT64_MAX), path);
}

TEST(DataFingerprint, FollowsTheContentNotThePath) {
  SynthConfig sc;
  sc.train_count = 300;
  sc.test_count = 40;
  sc.height = sc.width = 8;
  Dataset data = make_synthetic(sc);
  const std::string a = temp_path("fp_a.h5"), b = temp_path("fp_b.h5");
  write_hdf5_dataset(a, data);
  write_hdf5_dataset(b, data, 4);  // gzip: the same values, another file
  EXPECT_EQ(fingerprint_of(a), fingerprint_of(b));
  EXPECT_EQ(fingerprint_of(a), fingerprint_of(b, true));  // streamed: sampled images from disk
  data.train.labels[123] = (data.train.labels[123] + 1) % data.classes();  // one label
  write_hdf5_dataset(b, data);
  EXPECT_NE(fingerprint_of(a), fingerprint_of(b));
  data.train.labels[123] = make_synthetic(sc).train.labels[123];
  data.test.images.back() ^= 1;  // one pixel of the last test image (sampled)
  write_hdf5_dataset(b, data);
  EXPECT_NE(fingerprint_of(a), fingerprint_of(b));
  data.test.images.back() ^= 1;
  data.train.images.back() ^= 1;  // one pixel of the last train image, read from disk streamed
  write_hdf5_dataset(b, data);
  EXPECT_NE(fingerprint_of(a, true), fingerprint_of(b, true));
  EXPECT_THROW(fingerprint_of(temp_path("missing.h5")), Error);
}

CheckpointMeta recipe(int64_t per_rank, int ranks, int accum, int64_t samples) {
  CheckpointMeta m;
  m.batch_per_rank = per_rank;
  m.world_size = ranks;
  m.accum_steps = accum;
  m.samples_in_epoch = samples;
  m.epoch = 2;
  m.sample_order = describe_sample_order(0);
  return m;
}

TEST(ResumePosition, SameRecipeContinuesWhereItStopped) {
  const ResumePosition p = resume_position(recipe(16, 2, 3, 960), recipe(16, 2, 3, 0));
  EXPECT_TRUE(p.exact);
  EXPECT_EQ(p.samples, 960);
  EXPECT_EQ(p.batch_in_epoch, 30);  // 960 samples / (16 x 2) per micro-batch of all ranks
}

TEST(ResumePosition, AnotherRecipeWhoseGlobalBatchDividesThePositionIsExact) {
  // 960 samples; new global batch 8 x 4 x 2 = 64: 15 steps, 30 micro-batches per rank.
  const ResumePosition p = resume_position(recipe(16, 2, 3, 960), recipe(8, 4, 2, 0));
  EXPECT_TRUE(p.exact);
  EXPECT_EQ(p.samples, 960);
  EXPECT_EQ(p.batch_in_epoch, 30);
  EXPECT_EQ(p.batch_in_epoch % 2, 0);  // a whole number of optimizer steps
}

TEST(ResumePosition, AGlobalBatchThatDoesNotDivideItIsRefusedWithTheForcedPosition) {
  // 1000 samples; new global batch 128 x 1 x 3 = 384: not whole. Forced: 768 (2 steps).
  const ResumePosition p = resume_position(recipe(125, 8, 1, 1000), recipe(128, 1, 3, 0));
  EXPECT_FALSE(p.exact);
  EXPECT_EQ(p.samples, 768);
  EXPECT_EQ(p.batch_in_epoch, 6);
  EXPECT_NE(p.problem.find("consumed 1000 samples of epoch 3, which is not a whole number of the "
                           "new global batch 384 (--batch-size 128 on 1 ranks, --accum-steps 3)"),
            std::string::npos)
      << p.problem;
  EXPECT_NE(p.problem.find("--resume-force"), std::string::npos) << p.problem;
  EXPECT_NE(p.problem.find("global batch 1000 (--batch-size 125 on 8 ranks"), std::string::npos)
      << p.problem;
}

TEST(ResumePosition, StreamedWindowsAreExactOnlyUnderTheSameRecipe) {
  CheckpointMeta saved = recipe(16, 2, 1, 64), now = recipe(16, 2, 1, 0);
  saved.sample_order = now.sample_order = describe_sample_order(1000);
  EXPECT_TRUE(resume_position(saved, now).exact);
  now.batch_per_rank = 8;  // 64 is whole in 16, but windows are sharded per recipe
  const ResumePosition p = resume_position(saved, now);
  EXPECT_FALSE(p.exact);
  EXPECT_NE(p.problem.find("windows of 1000 images"), std::string::npos) << p.problem;
  now = recipe(16, 2, 1, 0);  // the same recipe, but held in memory now
  EXPECT_FALSE(resume_position(saved, now).exact);
}

TEST(CheckpointMismatch, NamesTheModelTheDataAndTheSeed) {
  CheckpointMeta saved = recipe(16, 1, 1, 0), now = saved;
  saved.data = "/old/place/cifar10.h5 (50000 train images)";
  now.data = "/new/place/cifar10.h5 (50000 train images)";
  saved.data_fingerprint = now.data_fingerprint = "0123456789abcdef";
  EXPECT_EQ(checkpoint_mismatch(saved, now), "");  // moved: the same content
  now.data_fingerprint = "fedcba9876543210";
  EXPECT_NE(checkpoint_mismatch(saved, now).find("other data"), std::string::npos);
  now.data_fingerprint = saved.data_fingerprint;
  now.seed = 5;
  EXPECT_NE(checkpoint_mismatch(saved, now).find("--seed 0 (this run: --seed 5)"),
            std::string::npos);
}

// What resume_position rests on: after k micro-batches of b on every rank, the ranks together
// have consumed the first k*b*world samples of the epoch's one permutation, whatever b and world.
TEST(DistributedSampler, AfterKBatchesTheRanksHaveConsumedAPrefixOfOnePermutation) {
  const int64_t n = 500;
  const std::vector<int64_t> order =
      DistributedSampler(n, 1, 0, true, ShardTail::drop, 11).indices_for_epoch(4);
  for (int world : {1, 2, 4, 5})
    for (int64_t b : {3, 8, 25}) {
      std::vector<std::vector<int64_t>> ranks;
      for (int r = 0; r < world; ++r)
        ranks.push_back(
            DistributedSampler(n, world, r, true, ShardTail::drop, 11).indices_for_epoch(4));
      for (int64_t k = 0; (k + 1) * b <= static_cast<int64_t>(ranks[0].size()); k += 3) {
        std::set<int64_t> seen, prefix(order.begin(), order.begin() + k * b * world);
        for (const auto& mine : ranks) seen.insert(mine.begin(), mine.begin() + k * b);
        ASSERT_EQ(seen, prefix) << "world " << world << ", batch " << b << ", k " << k;
      }
    }
}

ResNetConfig small_resnet(int depth, double width, int classes) {
  ResNetConfig c;
  c.depth = depth;
  c.width = width;
  c.classes = classes;
  return c;
}

// Writes a checkpoint of a ResNet built as `saved` to `path`.
void write_model_checkpoint(const ResNetConfig& saved, const std::string& path) {
  CpuBackend backend(1);
  ResNet written(saved, backend, DType::f32, 1);
  ParameterSet& p = written.parameters();
  CheckpointMeta meta;
  meta.model =
      str_cat("resnet", saved.depth, " ", to_string(saved.stem), " stem, width ", saved.width, ", ",
              saved.in_channels, " input channels, ", saved.classes, " classes");
  write_checkpoint(path, backend, p,
                   {{"momentum", backend.zeros(p.flat_params().shape(), DType::f32)}}, meta);
}

// The error of loading the checkpoint at `path` into a ResNet built as `now` ("" when none).
std::string load_error(const std::string& path, const ResNetConfig& now) {
  CpuBackend backend(1);
  ResNet loaded(now, backend, DType::f32, 2);
  Sgd sgd(loaded.parameters(), backend, OptimizerConfig{});
  try {
    load_checkpoint(path, backend, loaded.parameters(), &sgd);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The error of loading a checkpoint of a ResNet built as `saved` into one built as `now`.
std::string load_error(const ResNetConfig& saved, const ResNetConfig& now) {
  const std::string path = temp_path("mismatch.h5");
  write_model_checkpoint(saved, path);
  return load_error(path, now);
}

// The error names `parameter`, the checkpoint's and the model's shape of it (in that order),
// the model the checkpoint holds and the remedy.
void expect_names(const std::string& error, const std::string& parameter,
                  const std::string& checkpoint_shape, const std::string& model_shape,
                  const std::string& checkpoint_model) {
  EXPECT_NE(error.find(parameter), std::string::npos) << error;
  const size_t saved = error.find(checkpoint_shape), now = error.find(model_shape);
  EXPECT_NE(saved, std::string::npos) << error;
  EXPECT_NE(now, std::string::npos) << error;
  EXPECT_LT(saved, now) << error;
  EXPECT_NE(error.find(checkpoint_model), std::string::npos) << error;
  EXPECT_NE(error.find("--depth"), std::string::npos) << error;
  EXPECT_NE(error.find("--width"), std::string::npos) << error;
  EXPECT_NE(error.find("without --resume"), std::string::npos) << error;
}

TEST(CheckpointOfAnotherModel, AnotherWidthNamesTheFirstParameterAndBothShapes) {
  const std::string e = load_error(small_resnet(18, 0.125, 10), small_resnet(18, 0.25, 10));
  expect_names(e, "parameter stem.conv.weight", "[8,3,3,3]", "[16,3,3,3]", "width 0.125");
}

TEST(CheckpointOfAnotherModel, AnotherDepthNamesTheFirstParameterAndBothShapes) {
  // resnet50's first block starts with a 1x1 convolution, resnet18's with a 3x3 one.
  const std::string e = load_error(small_resnet(18, 0.125, 10), small_resnet(50, 0.125, 10));
  expect_names(e, "parameter layer1.0.1.conv.weight", "[8,8,3,3]", "[8,8,1,1]", "resnet18");
}

TEST(CheckpointOfAnotherModel, AShallowerCheckpointNamesTheFirstParameterItLacks) {
  // resnet34 has a third block in the first stage, resnet18 has two.
  const std::string e = load_error(small_resnet(18, 0.125, 10), small_resnet(34, 0.125, 10));
  expect_names(e, "parameter layer1.2.1.conv.weight", "not in the checkpoint", "[8,8,3,3]",
               "resnet18");
}

TEST(CheckpointOfAnotherModel, ADeeperCheckpointNamesAParameterTheModelLacks) {
  // Every parameter of resnet18 is in a resnet34 checkpoint, with its shape: the extra blocks
  // are what differs.
  const std::string e = load_error(small_resnet(34, 0.125, 10), small_resnet(18, 0.125, 10));
  expect_names(e, "parameter layer1.2.1.bn.bias", "[8]", "not in this model", "resnet34");
}

TEST(CheckpointOfAnotherModel, OtherClassesNameTheClassifierAndBothShapes) {
  const std::string e = load_error(small_resnet(18, 0.125, 10), small_resnet(18, 0.125, 100));
  expect_names(e, "parameter fc.weight", "[10,64]", "[100,64]", "10 classes");
}

TEST(CheckpointOfAnotherModel, ATensorStoredAsDoublesIsNamed) {
  const std::string path = temp_path("doubles.h5");
  write_model_checkpoint(small_resnet(18, 0.125, 10), path);
  // fc.bias rewritten as 64-bit floats, with its shape: reading would convert it silently.
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  ASSERT_GE(H5Ldelete(file, "/params/fc.bias", H5P_DEFAULT), 0);
  const hsize_t n = 10;
  const hid_t space = H5Screate_simple(1, &n, nullptr);
  const hid_t ds = H5Dcreate2(file, "/params/fc.bias", H5T_IEEE_F64LE, space, H5P_DEFAULT,
                              H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(ds, 0);
  ASSERT_GE(H5Dclose(ds), 0);
  ASSERT_GE(H5Sclose(space), 0);
  ASSERT_GE(H5Fclose(file), 0);
  const std::string e = load_error(path, small_resnet(18, 0.125, 10));
  EXPECT_NE(e.find("dataset /params/fc.bias holds 64-bit floats"), std::string::npos) << e;
  EXPECT_NE(e.find("without --resume"), std::string::npos) << e;
}

TEST(CheckpointOfAnotherModel, TheSameModelLoads) {
  EXPECT_EQ(load_error(small_resnet(18, 0.125, 10), small_resnet(18, 0.125, 10)), "");
}

}  // namespace
}  // namespace ringtrain
