#pragma once
// The crop geometry of the augmentation, shared by the host kernel (the loader and the CPU
// backend) and the CUDA kernel, so that both map output pixels to source pixels the same way.
#include "ringtrain/backend/kernels/host_device.hpp"

namespace ringtrain {

// Where one sample is cropped from its zero-padded image, and whether it is mirrored.
struct Crop {
  int dy = 0, dx = 0;  // offsets into the padded image, in [0, 2*pad]
  bool flip = false;
};

// The source pixel (sy, sx) that output pixel (y, x) of an H x W crop reads, in torchvision's
// order: pad, crop, then flip. False when it falls in the zero padding.
RT_HOST_DEVICE inline bool crop_source(Crop crop, int pad, int height, int width, int y, int x,
                                       int& sy, int& sx) {
  sy = y + crop.dy - pad;
  sx = (crop.flip ? width - 1 - x : x) + crop.dx - pad;
  return sy >= 0 && sy < height && sx >= 0 && sx < width;
}

}  // namespace ringtrain
