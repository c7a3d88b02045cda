#include "ringtrain/data/augment.hpp"

#include <algorithm>
#include <cmath>

#include "ringtrain/core/half.hpp"

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

ImageWriter::ImageWriter(const Split& split, const Normalization& norm, int pad, DType dtype,
                         Layout layout)
    : split_(split),
      pad_(pad),
      dtype_(dtype),
      layout_(layout),
      elements_(split.image_bytes()),
      table_(static_cast<size_t>(split.channels)) {
  RT_CHECK(pad >= 0, "ImageWriter: padding must be >= 0, got ", pad);
  RT_CHECK(dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16,
           "ImageWriter: images are written as f32, bf16 or f16, not ", dtype_name(dtype));
  RT_CHECK(static_cast<int>(norm.mean.size()) == split.channels &&
               static_cast<int>(norm.std.size()) == split.channels,
           "ImageWriter: normalisation has ", norm.mean.size(), " channels, the data ",
           split.channels);
  for (int c = 0; c < split.channels; ++c)
    for (int v = 0; v < 256; ++v) table_[c][v] = (v / 255.0f - norm.mean[c]) / norm.std[c];
}

// One output row of channel c at a time: the source columns of the valid range [lo, hi) are
// one contiguous run (walked backwards when flipped), so the inner loop is a plain lookup.
template <class T, class Convert>
void ImageWriter::write_as(int64_t index, Crop crop, T* out, Convert convert) const {
  const int H = split_.height, W = split_.width, C = split_.channels;
  const uint8_t* src = split_.image(index);
  // Output column x reads source column x + dx - pad (before the mirror).
  const int shift = crop.dx - pad_;
  const int lo = std::clamp(-shift, 0, W), hi = std::clamp(W - shift, lo, W);
  const int64_t x_stride = layout_ == Layout::nchw ? 1 : C;
  for (int c = 0; c < C; ++c) {
    const std::array<float, 256>& table = table_[c];
    const T pad_value = convert(table[0]);
    for (int y = 0; y < H; ++y) {
      T* row =
          layout_ == Layout::nchw ? out + (int64_t{c} * H + y) * W : out + int64_t{y} * W * C + c;
      const int sy = y + crop.dy - pad_;
      if (sy < 0 || sy >= H) {
        for (int x = 0; x < W; ++x) row[x * x_stride] = pad_value;
        continue;
      }
      const uint8_t* line = src + int64_t{sy} * W * C + c;
      for (int x = 0; x < lo; ++x) row[(crop.flip ? W - 1 - x : x) * x_stride] = pad_value;
      for (int x = hi; x < W; ++x) row[(crop.flip ? W - 1 - x : x) * x_stride] = pad_value;
      if (crop.flip) {
        for (int x = lo; x < hi; ++x)
          row[(W - 1 - x) * x_stride] = convert(table[line[(x + shift) * C]]);
      } else {
        for (int x = lo; x < hi; ++x) row[x * x_stride] = convert(table[line[(x + shift) * C]]);
      }
    }
  }
}

void ImageWriter::write(int64_t index, Crop crop, void* out) const {
  RT_CHECK(index >= 0 && index < split_.count, "ImageWriter: sample ", index, " outside [0, ",
           split_.count, ")");
  if (dtype_ == DType::f32) {
    write_as(index, crop, static_cast<float*>(out), [](float v) { return v; });
  } else if (dtype_ == DType::bf16) {
    write_as(index, crop, static_cast<uint16_t*>(out), float_to_bf16);
  } else {
    write_as(index, crop, static_cast<uint16_t*>(out), float_to_f16);
  }
}

}  // namespace ringtrain
