#include "ringtrain/data/synthetic.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "ringtrain/core/checked_math.hpp"
#include "ringtrain/core/memory_budget.hpp"
#include "ringtrain/data/provenance.hpp"

namespace ringtrain {
namespace {

struct Wave {
  double fx, fy, phase;
};

Split make_split(const SynthConfig& c, const std::vector<Wave>& waves, int64_t count,
                 std::mt19937_64& rng) {
  const double pi2 = 2 * std::acos(-1.0);
  Split s;
  s.count = count;
  s.height = c.height;
  s.width = c.width;
  s.channels = c.channels;
  s.images.resize(static_cast<size_t>(count * s.image_bytes()));
  s.labels.resize(static_cast<size_t>(count));
  std::uniform_int_distribution<int> label(0, c.classes - 1), shift(-3, 3);
  std::normal_distribution<double> noise(0.0, 40.0);
  for (int64_t i = 0; i < count; ++i) {
    const int k = label(rng), dy = shift(rng), dx = shift(rng);
    s.labels[i] = k;
    uint8_t* img = s.images.data() + i * s.image_bytes();
    for (int y = 0; y < c.height; ++y)
      for (int x = 0; x < c.width; ++x)
        for (int ch = 0; ch < c.channels; ++ch) {
          const Wave& w = waves[static_cast<size_t>(k * c.channels + ch)];
          const double v =
              128 + 70 * std::sin(pi2 * (w.fx * (x + dx) / c.width + w.fy * (y + dy) / c.height) +
                                  w.phase);
          img[(y * c.width + x) * c.channels + ch] =
              static_cast<uint8_t>(std::clamp(v + noise(rng), 0.0, 255.0));
        }
  }
  return s;
}

void check_synth_fits(const SynthConfig& c) {
  const int64_t image = checked_mul(int64_t{c.height} * c.width, c.channels, "synth: image bytes");
  const int64_t images = checked_add(c.train_count, c.test_count, "synth: images");
  check_fits_memory(
      checked_mul(images, image, "synth: dataset bytes"),
      str_cat("synth: ", images, " images of ", c.height, "x", c.width, "x", c.channels),
      "lower --train, --test or the image size");
}

}  // namespace

Dataset make_synthetic(const SynthConfig& c) {
  RT_CHECK(c.train_count > 0 && c.test_count > 0 && c.train_count <= kMaxSynthImages &&
               c.test_count <= kMaxSynthImages,
           "synth: split sizes must be in [1, ", kMaxSynthImages, "], got ", c.train_count, " and ",
           c.test_count);
  RT_CHECK(c.height > 0 && c.width > 0 && c.height <= kMaxSynthSide && c.width <= kMaxSynthSide,
           "synth: image sides must be in [1, ", kMaxSynthSide, "], got ", c.height, "x", c.width);
  RT_CHECK(c.channels == 1 || c.channels == 3, "synth: channels must be 1 or 3, got ", c.channels);
  RT_CHECK(c.classes >= 2, "synth: need at least 2 classes, got ", c.classes);
  check_synth_fits(c);
  std::mt19937_64 rng(c.seed);
  std::uniform_int_distribution<int> freq(-3, 3);
  std::uniform_real_distribution<double> phase(0, 2 * std::acos(-1.0));
  std::vector<Wave> waves;
  for (int i = 0; i < c.classes * c.channels; ++i)
    waves.push_back({double(freq(rng)), double(freq(rng)), phase(rng)});
  Dataset d;
  d.train = make_split(c, waves, c.train_count, rng);
  d.test = make_split(c, waves, c.test_count, rng);
  for (int k = 0; k < c.classes; ++k) d.class_names.push_back("pattern" + std::to_string(k));
  return d;
}

FileAttributes synthetic_attributes(const SynthConfig& c, const Dataset& data,
                                    const std::string& importer) {
  Provenance p;
  p.importer = importer;
  p.generator =
      str_cat("make_synthetic: ", c.train_count, " train and ", c.test_count, " test images ",
              c.height, "x", c.width, "x", c.channels, ", ", c.classes, " classes");
  p.seed = std::to_string(c.seed);
  FileAttributes attributes;
  add_provenance(p, data, attributes);
  return attributes;
}

}  // namespace ringtrain
