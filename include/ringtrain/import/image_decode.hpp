#pragma once
// The pixel policy of `ringtrain data import-images`: PNG and JPEG files decoded to 8-bit RGB
// (libpng, libjpeg-turbo) and resized to the stored size.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ringtrain {

// The largest image decoded, in pixels (height x width): a larger one is refused by name
// rather than allocating gigabytes for one file.
constexpr int64_t kMaxDecodedPixels = int64_t{1} << 28;

// An 8-bit RGB image: `height` rows of `width` pixels, R G B interleaved (HWC).
struct RgbImage {
  int height = 0, width = 0;
  std::vector<uint8_t> pixels;
};

// Told, once an image's header is read and before its pixels are decoded, its size and the bytes
// decoding it will hold (its RGB pixels, and a progressive JPEG's coefficients): where a caller
// waits for memory. It may throw to refuse the image.
using DecodeReserve = std::function<void(int height, int width, int64_t bytes)>;

// Decodes the PNG or JPEG file at `path`, told apart by its first bytes (not its extension),
// to RGB as PIL's convert("RGB") does for torchvision's ImageFolder: grayscale is copied to R, G
// and B; alpha and transparency are dropped (not blended onto a background); palettes are
// looked up; 16-bit PNG samples keep their high byte; gamma, colour profiles and EXIF
// orientation are ignored. JPEGs use libjpeg's defaults (accurate integer DCT, smooth chroma
// upsampling); CMYK (and YCCK) JPEGs are refused, naming their colour space and the remedy. An
// unreadable, truncated or corrupt file, and a JPEG that libjpeg warns about (corrupt data it
// would fill with grey), throws an Error naming the file and the library's reason. `reserve`
// (may be empty) hears the image's size before its pixels are allocated.
RgbImage decode_image(const std::string& path, const DecodeReserve& reserve = {});

// Scales `src` by s = max(height / h, width / w), so that it covers height x width, and keeps
// the centre. Output row y samples the source at c = (y + 0.5 + oy) / s - 0.5, where
// oy = (h s - height) / 2 (columns alike), with the bilinear (triangle) filter widened to
// r = max(1, 1 / s) source pixels when shrinking (antialiased, as PIL's BILINEAR resize):
// source row i weighs max(0, 1 - |i - c| / r), weights renormalised over the rows that exist.
// The value is rounded to the nearest integer. A source already height x width is copied.
RgbImage resize_and_crop(const RgbImage& src, int height, int width);

// resize_and_crop into `out`, height x width x 3 bytes that the caller holds.
void resize_and_crop(const RgbImage& src, int height, int width, uint8_t* out);

// The bytes resize_and_crop holds beside its source and output: every source row filtered to
// the output's `width`, in float.
int64_t resize_bytes(int source_height, int width);

}  // namespace ringtrain
