#pragma once
#include <cstdint>
#include <vector>

#include "ringtrain/backend/cpu/augment_kernel.hpp"
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

// Counter-based draw: the same (seed, epoch, sample index) gives the same crop on any thread,
// so batches do not depend on the worker count. Without augmentation: the centre, unflipped.
Crop draw_crop(uint64_t seed, int64_t epoch, int64_t index, int pad, bool augment);

// table[c * 256 + v]: the normalised value of pixel value v in channel c, for every channel.
std::vector<float> normalization_table(const Normalization& norm);

// Writes images in the layout and dtype the backend computes in: f32 NCHW for the CPU, bf16 or
// f16 NHWC for CUDA. Padding is pixel value 0, normalised (torchvision's order: pad, crop, flip,
// then normalise). In dtype u8 (augmentation on the device) it writes the source image as it
// is, uint8 NHWC, and Backend::augment applies the crop and the table after the copy.
class ImageTransform {
 public:
  ImageTransform(const Split& split, const Normalization& norm, int pad, DType dtype,
                 Layout layout);

  int64_t image_elements() const { return dims_.elements(); }
  std::size_t image_bytes() const {
    return static_cast<std::size_t>(image_elements()) * dtype_size(dtype_);
  }
  DType dtype() const { return dtype_; }
  Layout layout() const { return layout_; }
  // Whether write() leaves the augmentation to the device.
  bool raw() const { return dtype_ == DType::u8; }

  void write(int64_t index, Crop crop, void* out) const;

 private:
  const Split& split_;
  int pad_;
  DType dtype_;
  Layout layout_;
  cpu::ImageDims dims_;
  std::vector<float> table_;
};

}  // namespace ringtrain
