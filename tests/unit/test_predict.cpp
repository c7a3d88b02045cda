// `ringtrain predict`'s library: image files of a checkpoint's image size through decoding,
// channel conversion, normalisation and the model, against a direct forward of the same
// pixels; unreadable files; the grayscale and softmax arithmetic by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "eval_reference.hpp"
#include "image_files.hpp"
#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/data/synthetic.hpp"
#include "ringtrain/evaluation/evaluation.hpp"
#include "ringtrain/evaluation/inference.hpp"
#include "test_util.hpp"

namespace ringtrain {
namespace {

TEST(Predict, GrayscaleIsPilsLuma) {
  RgbImage image{1, 6, {255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255, 10, 10, 10, 0, 0, 0}};
  // PIL: Image.new("RGB", ...).convert("L") gives 76, 150, 29 for pure red, green and blue.
  EXPECT_EQ(to_grayscale(image), std::vector<uint8_t>({76, 150, 29, 255, 10, 0}));
}

TEST(Predict, SoftmaxByHand) {
  const float logits[] = {0, std::log(3.0f), 0};
  const std::vector<double> p = softmax(logits, 3);
  EXPECT_NEAR(p[0], 0.2, 1e-7);  // f32 log(3)
  EXPECT_NEAR(p[1], 0.6, 1e-7);
  EXPECT_NEAR(p[2], 0.2, 1e-7);
}

// A random model of 4 classes for 8x8 images of `channels`, written as a checkpoint.
struct Trained {
  Dataset data;
  CpuBackend backend{1};
  CheckpointMeta meta;
  std::unique_ptr<ResNet> model;
  std::string path;
};

void make_trained(Trained& t, int channels, const std::string& name) {
  SynthConfig sc;
  sc.train_count = 16;
  sc.test_count = 5;
  sc.height = sc.width = 8;
  sc.channels = channels;
  sc.classes = 4;
  t.data = make_synthetic(sc);
  t.meta.model_config.depth = 18;
  t.meta.model_config.width = 0.125;
  t.meta.model_config.classes = 4;
  t.meta.model_config.in_channels = channels;
  t.meta.image_height = t.meta.image_width = 8;
  t.meta.class_names = t.data.class_names;
  t.meta.norm = channel_statistics(t.data.train);
  t.model = std::make_unique<ResNet>(t.meta.model_config, t.backend, DType::f32, 11);
  ParameterSet& p = t.model->parameters();
  t.path = test::temp_path(name);
  write_checkpoint(t.path, t.backend, p,
                   {{"momentum", t.backend.zeros(p.flat_params().shape(), DType::f32)}}, t.meta);
}

test::PngSpec rgb_png(int side) {
  test::PngSpec spec;
  spec.width = spec.height = side;
  return spec;
}

std::vector<uint8_t> test_image(const Trained& t, int64_t i) {
  return {t.data.test.image(i), t.data.test.image(i) + t.data.test.image_bytes()};
}

// The reference prediction of pixels (8x8, the model's channels): top `k` and probabilities.
void expect_prediction(Trained& t, const std::vector<uint8_t>& pixels, const Prediction& got,
                       int k) {
  ASSERT_TRUE(got.error.empty()) << got.error;
  const int c = t.meta.model_config.in_channels;
  const std::vector<float> logits =
      test::reference_logits(*t.model, t.backend, {pixels}, 8, 8, c, t.meta.norm);
  double sum = 0;
  for (float v : logits) sum += std::exp(double(v));
  std::vector<int> order = {0, 1, 2, 3};
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return logits[size_t(a)] > logits[size_t(b)]; });
  order.resize(size_t(k));
  EXPECT_EQ(got.classes, order) << got.path;
  for (size_t i = 0; i < got.classes.size(); ++i)  // f32 logits
    EXPECT_NEAR(got.probabilities[i], std::exp(double(logits[size_t(order[i])])) / sum, 1e-6)
        << got.path;
}

TEST(Predict, PngAndJpegFilesGiveTheModelsPredictionOfTheirPixels) {
  Trained t;
  make_trained(t, 3, "predict_rgb.h5");
  const std::string png = test::temp_path("predict 0 \xc3\xa9t\xc3\xa9.png");
  const std::string jpeg = test::temp_path("predict1.jpg");
  const std::string big = test::temp_path("predict2_16x16.png");
  const std::string missing = test::temp_path("predict_missing.png");
  const std::string corrupt = test::temp_path("predict_corrupt.png");
  test::write_png(png, rgb_png(8), test_image(t, 0));
  test::write_jpeg(jpeg, 8, 8, 3, test_image(t, 1), 90);
  std::vector<uint8_t> twice(16 * 16 * 3);  // image 2 with each pixel doubled both ways
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 16; ++x)
      for (int c = 0; c < 3; ++c)
        twice[size_t((y * 16 + x) * 3 + c)] = t.data.test.image(2)[((y / 2) * 8 + x / 2) * 3 + c];
  test::write_png(big, rgb_png(16), twice);
  std::ofstream(corrupt) << "not an image";

  LoadedModel loaded = load_model(t.path, t.backend);
  const std::vector<Prediction> got =
      predict_images(loaded, t.backend, {png, missing, jpeg, corrupt, big}, 3, 2);
  ASSERT_EQ(got.size(), 5u);
  expect_prediction(t, test_image(t, 0), got[0], 3);
  int components = 0;
  expect_prediction(t, test::read_jpeg(jpeg, components), got[2], 3);
  expect_prediction(t, resize_and_crop(decode_image(big), 8, 8).pixels, got[4], 3);
  for (int bad : {1, 3}) {
    EXPECT_TRUE(got[size_t(bad)].classes.empty());
    EXPECT_NE(got[size_t(bad)].error.find(got[size_t(bad)].path), std::string::npos)
        << got[size_t(bad)].error;
  }
}

TEST(Predict, AGrayscaleModelGetsTheLumaOfAColourImage) {
  Trained t;
  make_trained(t, 1, "predict_gray.h5");
  std::vector<uint8_t> rgb(8 * 8 * 3), luma(8 * 8);
  for (size_t p = 0; p < luma.size(); ++p) {
    const uint8_t v = t.data.test.image(0)[p];
    rgb[3 * p] = v;  // red carries the image; green and blue vary around it
    rgb[3 * p + 1] = static_cast<uint8_t>(255 - v);
    rgb[3 * p + 2] = static_cast<uint8_t>(p * 4);
    luma[p] = static_cast<uint8_t>(
        std::lround(0.299 * rgb[3 * p] + 0.587 * rgb[3 * p + 1] + 0.114 * rgb[3 * p + 2]));
  }
  const std::string png = test::temp_path("predict_colour.png");
  test::write_png(png, rgb_png(8), rgb);
  LoadedModel loaded = load_model(t.path, t.backend);
  const std::vector<Prediction> got = predict_images(loaded, t.backend, {png}, 10);
  expect_prediction(t, to_grayscale(decode_image(png)), got[0], 4);  // --top 10 of 4 classes
  EXPECT_EQ(to_grayscale(decode_image(png)).size(), luma.size());
  for (size_t p = 0; p < luma.size(); ++p)  // integer weights against real ones: off by one
    EXPECT_NEAR(to_grayscale(decode_image(png))[p], luma[p], 1) << p;
}

TEST(Predict, TopZeroIsAUsageError) {
  Trained t;
  make_trained(t, 3, "predict_top0.h5");
  LoadedModel loaded = load_model(t.path, t.backend);
  EXPECT_THROW(predict_images(loaded, t.backend, {}, 0), ConfigError);
}

}  // namespace
}  // namespace ringtrain
