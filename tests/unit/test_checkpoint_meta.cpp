// A checkpoint's meta as structured attributes (the model, image size, class names and
// normalisation) and the HDF5 attribute helpers under it.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/checkpoint/checkpoint.hpp"
#include "ringtrain/checkpoint/model_file.hpp"
#include "ringtrain/core/error.hpp"
#include "ringtrain/core/hdf5_attributes.hpp"
#include "ringtrain/nn/resnet.hpp"
#include "test_util.hpp"

namespace ringtrain {
namespace {

using test::temp_path;

CheckpointMeta structured_meta() {
  CheckpointMeta m;
  m.model_config.depth = 18;
  m.model_config.stem = Stem::imagenet;
  m.model_config.width = 0.125;
  m.model_config.classes = 3;
  m.model_config.in_channels = 1;
  m.model_config.zero_init_residual = true;
  m.image_height = 7;
  m.image_width = 9;
  m.class_names = {"chat noir", "\xc3\xa9t\xc3\xa9", "\xe7\x8c\xab"};  // UTF-8 survives
  m.norm.mean = {0.4914f};
  m.norm.std = {0.2470f};
  return m;
}

std::string write_meta_checkpoint(const CheckpointMeta& meta, const std::string& name) {
  CpuBackend backend(1);
  ResNet model(meta.model_config, backend, DType::f32, 1);
  ParameterSet& p = model.parameters();
  const std::string path = temp_path(name);
  write_checkpoint(path, backend, p,
                   {{"momentum", backend.zeros(p.flat_params().shape(), DType::f32)}}, meta);
  return path;
}

TEST(CheckpointMeta, TheModelImageSizeClassesAndNormalisationRoundTrip) {
  const CheckpointMeta written = structured_meta();
  const CheckpointMeta read = read_checkpoint_meta(write_meta_checkpoint(written, "meta.h5"));
  const ResNetConfig &a = written.model_config, &b = read.model_config;
  EXPECT_EQ(b.depth, a.depth);
  EXPECT_EQ(b.stem, a.stem);
  EXPECT_EQ(b.width, a.width);
  EXPECT_EQ(b.classes, a.classes);
  EXPECT_EQ(b.in_channels, a.in_channels);
  EXPECT_EQ(b.zero_init_residual, a.zero_init_residual);
  EXPECT_EQ(read.image_height, 7);
  EXPECT_EQ(read.image_width, 9);
  EXPECT_EQ(read.class_names, written.class_names);
  EXPECT_EQ(read.norm.mean, written.norm.mean);
  EXPECT_EQ(read.norm.std, written.norm.std);
}

TEST(CheckpointMeta, AHundredThousandClassNamesRoundTrip) {
  CheckpointMeta written = structured_meta();
  written.class_names.resize(100000);
  for (size_t i = 0; i < written.class_names.size(); ++i)
    written.class_names[i] = "class " + std::to_string(i);
  const std::string path = write_meta_checkpoint(written, "many_classes.h5");
  EXPECT_EQ(verify_checkpoint(path).class_names, written.class_names);
}

TEST(CheckpointMeta, AnEditedModelAttributeFailsTheMetaChecksum) {
  const std::string path = write_meta_checkpoint(structured_meta(), "edited.h5");
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  const hid_t attr = H5Aopen(file, "model_classes", H5P_DEFAULT);
  ASSERT_GE(attr, 0);
  const int64_t classes = 4;
  ASSERT_GE(H5Awrite(attr, H5T_NATIVE_INT64, &classes), 0);
  ASSERT_GE(H5Aclose(attr), 0);
  ASSERT_GE(H5Fclose(file), 0);
  try {
    read_checkpoint_meta(path);
    FAIL() << "an edited model_classes was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("meta_xxh64"), std::string::npos) << e.what();
  }
}

// The effective configuration: several lines of TOML, UTF-8 kept, absent when not given (as in
// the checkpoints written before it was kept).
TEST(CheckpointMeta, TheEffectiveConfigRoundTripsAndIsLeftOutWhenEmpty) {
  CheckpointMeta with = structured_meta();
  with.effective_config = "# c\nlr = 0.05\ndata = \"\xc3\xa9t\xc3\xa9 #1.h5\"\n";
  EXPECT_EQ(read_checkpoint_meta(write_meta_checkpoint(with, "toml.h5")).effective_config,
            with.effective_config);
  const std::string path = write_meta_checkpoint(structured_meta(), "no_toml.h5");
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  EXPECT_EQ(H5Aexists(file, "effective_config"), 0);
  ASSERT_GE(H5Fclose(file), 0);
  EXPECT_EQ(read_checkpoint_meta(path).effective_config, "");
}

// The checksum covers it: an edited one and a removed one are both refused.
TEST(CheckpointMeta, AnEditedOrRemovedEffectiveConfigFailsTheMetaChecksum) {
  CheckpointMeta meta = structured_meta();
  meta.effective_config = "lr = 0.05\n";
  for (const bool replace : {true, false}) {
    const std::string path = write_meta_checkpoint(meta, "toml_edited.h5");
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    ASSERT_GE(H5Adelete(file, "effective_config"), 0);
    if (replace) write_text_attribute(file, "effective_config", "lr = 0.5\n", "t: ");
    ASSERT_GE(H5Fclose(file), 0);
    try {
      read_checkpoint_meta(path);
      FAIL() << (replace ? "an edited" : "a removed") << " effective_config was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("meta_xxh64"), std::string::npos) << e.what();
    }
  }
}

TEST(LoadModel, RebuildsTheCheckpointsModelWithItsWeights) {
  CheckpointMeta meta = structured_meta();
  CpuBackend backend(1);
  ResNet trained(meta.model_config, backend, DType::f32, 7);
  ParameterSet& p = trained.parameters();
  const std::string path = temp_path("model.h5");
  write_checkpoint(path, backend, p,
                   {{"momentum", backend.zeros(p.flat_params().shape(), DType::f32)}}, meta);
  const LoadedModel loaded = load_model(path, backend);
  EXPECT_EQ(loaded.meta.class_names, meta.class_names);
  ASSERT_EQ(loaded.model->parameter_count(), trained.parameter_count());
  const Tensor& a = trained.parameters().flat_params();
  const Tensor& b = loaded.model->parameters().flat_params();
  const float* x = static_cast<const float*>(a.raw());
  const float* y = static_cast<const float*>(b.raw());
  EXPECT_TRUE(std::equal(x, x + a.numel(), y));  // seed 7's weights, not load_model's own
}

// A file with one attribute of each kind the helpers read, written with the raw HDF5 API.
class Hdf5Attributes : public ::testing::Test {
 protected:
  void SetUp() override {
    file_ = H5Fcreate(temp_path("attrs.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(file_, 0);
  }
  void TearDown() override { H5Fclose(file_); }
  hid_t file_ = -1;
};

TEST_F(Hdf5Attributes, FixedLengthSpacePaddedTextLosesItsPadding) {
  const hid_t type = H5Tcopy(H5T_C_S1);
  ASSERT_GE(H5Tset_size(type, 8), 0);
  ASSERT_GE(H5Tset_strpad(type, H5T_STR_SPACEPAD), 0);
  const hsize_t n = 2;
  const hid_t space = H5Screate_simple(1, &n, nullptr);
  const hid_t attr = H5Acreate2(file_, "names", type, space, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(H5Awrite(attr, type, "cat     dog     "), 0);
  H5Aclose(attr);
  H5Sclose(space);
  H5Tclose(type);
  EXPECT_EQ(read_texts_attribute(file_, "names", "t: "), (std::vector<std::string>{"cat", "dog"}));
}

TEST_F(Hdf5Attributes, TextsNumbersAndEmptyVectorsRoundTrip) {
  write_texts_attribute(file_, "texts", {"a", "", "\xc3\xbc"}, "t: ");
  write_texts_attribute(file_, "none", {}, "t: ");
  write_numbers_attribute(file_, "numbers", {0.5, -1e300}, "t: ");
  write_text_attribute(file_, "one", "x y", "t: ");
  EXPECT_EQ(read_texts_attribute(file_, "texts", "t: "),
            (std::vector<std::string>{"a", "", "\xc3\xbc"}));
  EXPECT_TRUE(read_texts_attribute(file_, "none", "t: ").empty());
  EXPECT_EQ(read_numbers_attribute(file_, "numbers", "t: "), (std::vector<double>{0.5, -1e300}));
  EXPECT_EQ(read_texts_attribute(file_, "one", "t: "), std::vector<std::string>{"x y"});
}

TEST_F(Hdf5Attributes, AMissingOrMistypedAttributeIsNamed) {
  write_text_attribute(file_, "text", "3", "t: ");
  try {
    read_numbers_attribute(file_, "text", "where: attribute text: ");
    FAIL() << "text read as numbers";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "where: attribute text: is not numeric");
  }
  try {
    read_texts_attribute(file_, "absent", "where: attribute absent: ");
    FAIL() << "a missing attribute read";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "where: attribute absent: missing");
  }
}

}  // namespace
}  // namespace ringtrain
