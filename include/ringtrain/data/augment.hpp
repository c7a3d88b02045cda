#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "ringtrain/core/tensor.hpp"
#include "ringtrain/data/dataset.hpp"

namespace ringtrain {

// Per-channel mean and standard deviation of the pixels, on the [0,1] scale.
struct Normalization {
  std::vector<float> mean, std;
};
Normalization channel_statistics(const Split& split);

// The same statistics accumulated over parts of a split (for splits streamed from disk).
class ChannelMoments {
 public:
  explicit ChannelMoments(int channels);
  void add(const uint8_t* nhwc, int64_t pixels);
  Normalization finish() const;

 private:
  std::vector<double> sum_, sum_sq_;
  int64_t pixels_ = 0;
};

// Where one sample is cropped from its zero-padded image, and whether it is mirrored.
struct Crop {
  int dy = 0, dx = 0;  // offsets into the padded image, in [0, 2*pad]
  bool flip = false;
};

// Counter-based draw: the same (seed, epoch, sample index) gives the same crop on any thread,
// so batches do not depend on the worker count. Without augmentation: the centre, unflipped.
Crop draw_crop(uint64_t seed, int64_t epoch, int64_t index, int pad, bool augment);

// Writes images in the layout and dtype the backend computes in: f32 NCHW for the CPU, bf16 or
// f16 NHWC for CUDA. Each uint8 value maps through a 256-entry table per channel, so
// normalisation is one lookup; padding is pixel value 0, normalised (torchvision's order:
// pad, crop, flip, then normalise).
class ImageWriter {
 public:
  ImageWriter(const Split& split, const Normalization& norm, int pad, DType dtype, Layout layout);

  int64_t image_elements() const { return elements_; }
  std::size_t image_bytes() const {
    return static_cast<std::size_t>(elements_) * dtype_size(dtype_);
  }
  DType dtype() const { return dtype_; }
  Layout layout() const { return layout_; }
  int pad() const { return pad_; }

  void write(int64_t index, Crop crop, void* out) const;

 private:
  template <class T, class Convert>
  void write_as(int64_t index, Crop crop, T* out, Convert convert) const;

  const Split& split_;
  int pad_;
  DType dtype_;
  Layout layout_;
  int64_t elements_;
  std::vector<std::array<float, 256>> table_;  // [channel][pixel value]
};

}  // namespace ringtrain
