#include "ringtrain/loader/augment.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace ringtrain {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

ChannelMoments::ChannelMoments(int channels)
    : sum_(static_cast<size_t>(channels), 0.0), sum_sq_(sum_) {}

void ChannelMoments::add(const uint8_t* nhwc, int64_t pixels) {
  const size_t channels = sum_.size();
  for (int64_t p = 0; p < pixels; ++p)
    for (size_t c = 0; c < channels; ++c) {
      const double v = nhwc[static_cast<size_t>(p) * channels + c] / 255.0;
      sum_[c] += v;
      sum_sq_[c] += v * v;
    }
  pixels_ += pixels;
}

Normalization ChannelMoments::finish() const {
  Normalization n;
  for (size_t c = 0; c < sum_.size(); ++c) {
    const double mean = sum_[c] / pixels_;
    n.mean.push_back(static_cast<float>(mean));
    n.std.push_back(
        static_cast<float>(std::sqrt(std::max(sum_sq_[c] / pixels_ - mean * mean, 1e-12))));
  }
  return n;
}

Normalization channel_statistics(const Split& s) {
  ChannelMoments m(s.channels);
  m.add(s.images.data(), s.count * s.height * s.width);
  return m.finish();
}

Crop draw_crop(uint64_t seed, int64_t epoch, int64_t index, int pad, bool augment) {
  if (!augment) return {pad, pad, false};
  const uint64_t z = splitmix64(splitmix64(seed ^ splitmix64(static_cast<uint64_t>(epoch))) +
                                static_cast<uint64_t>(index));
  const uint64_t span = static_cast<uint64_t>(2 * pad + 1);
  return {static_cast<int>(z % span), static_cast<int>((z >> 20) % span), ((z >> 40) & 1u) != 0};
}

std::vector<float> normalization_table(const Normalization& norm) {
  std::vector<float> table(norm.mean.size() * 256);
  for (size_t c = 0; c < norm.mean.size(); ++c)
    for (int v = 0; v < 256; ++v) table[c * 256 + v] = (v / 255.0f - norm.mean[c]) / norm.std[c];
  return table;
}

ImageTransform::ImageTransform(const Split& split, const Normalization& norm, int pad, DType dtype,
                               Layout layout)
    : split_(split),
      pad_(pad),
      dtype_(dtype),
      layout_(layout),
      dims_{split.height, split.width, split.channels},
      table_(normalization_table(norm)) {
  RT_CHECK(pad >= 0, "ImageTransform: padding must be >= 0, got ", pad);
  RT_CHECK(dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16 ||
               (dtype == DType::u8 && layout == Layout::nhwc),
           "ImageTransform: images are written as f32, bf16 or f16, or as uint8 NHWC for "
           "augmentation on the device, not ",
           dtype_name(dtype), layout == Layout::nchw ? " NCHW" : " NHWC");
  RT_CHECK(static_cast<int>(norm.mean.size()) == split.channels &&
               static_cast<int>(norm.std.size()) == split.channels,
           "ImageTransform: normalisation has ", norm.mean.size(), " channels, the data ",
           split.channels);
}

void ImageTransform::write(int64_t index, Crop crop, void* out) const {
  RT_CHECK(index >= 0 && index < split_.count, "ImageTransform: sample ", index, " outside [0, ",
           split_.count, ")");
  if (raw()) {
    std::memcpy(out, split_.image(index), image_bytes());
    return;
  }
  cpu::augment_image(split_.image(index), dims_, crop, pad_, table_.data(), dtype_, layout_, out);
}

}  // namespace ringtrain
