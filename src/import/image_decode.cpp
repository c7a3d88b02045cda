#include "ringtrain/import/image_decode.hpp"

#include <fcntl.h>
#include <png.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstring>

#include <jpeglib.h>

#include "ringtrain/core/error.hpp"

namespace ringtrain {
namespace {

constexpr const char* kWhat = "data import-images: ";
// No image file this large is an image of a dataset; reading it would only exhaust memory.
constexpr int64_t kMaxFileBytes = int64_t{1} << 30;

// The whole file, read with checked POSIX calls.
std::vector<uint8_t> read_file(const std::string& path) {
  // Note: O_NONBLOCK, or a FIFO with an image's name would block the import forever.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  RT_CHECK(fd >= 0, kWhat, path, ": cannot be read: ", std::strerror(errno), " (open)");
  struct stat st {};
  int code = fstat(fd, &st) == 0 ? 0 : errno;
  const bool regular = code == 0 && S_ISREG(st.st_mode);
  std::vector<uint8_t> bytes;
  if (regular && st.st_size <= kMaxFileBytes) bytes.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (code == 0 && done < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n > 0) done += static_cast<size_t>(n);
    if (n == 0) break;
    if (n < 0 && errno != EINTR) code = errno;
  }
  ::close(fd);
  RT_CHECK(code == 0, kWhat, path, ": cannot be read: ", std::strerror(code));
  RT_CHECK(regular, kWhat, path, ": not a regular file: remove it from the folder");
  RT_CHECK(st.st_size <= kMaxFileBytes, kWhat, path, ": ", st.st_size,
           " bytes, more than any image file of a dataset (1 GiB): remove it from the folder");
  bytes.resize(done);
  return bytes;
}

// Refuses an implausibly large image by name, then tells `reserve` (when set) the bytes decoding
// it will hold: its RGB pixels and `extra`.
void announce(const std::string& path, int64_t height, int64_t width, int64_t extra,
              const DecodeReserve& reserve) {
  RT_CHECK(height > 0 && width > 0 && height * width <= kMaxDecodedPixels, kWhat, path, ": ",
           height, "x", width, " pixels: more than the ", kMaxDecodedPixels,
           " an image may have here: shrink it first");
  if (reserve)
    reserve(static_cast<int>(height), static_cast<int>(width), height * width * 3 + extra);
}

RgbImage blank_image(int64_t height, int64_t width) {
  RgbImage image;
  image.height = static_cast<int>(height);
  image.width = static_cast<int>(width);
  image.pixels.resize(static_cast<size_t>(height * width * 3));
  return image;
}

// Note: libjpeg and libpng report errors by longjmp, to the setjmp here. `body` runs between
// the two and must hold no object with a destructor (the jump would skip it); the decoders'
// state lives in the callers' structs, whose destructors free it after the jump.
template <class F>
bool guarded(std::jmp_buf& jump, F&& body) {
  if (setjmp(jump)) return false;
  body();
  return true;
}

// libjpeg's error manager, followed by where to jump and the message.
struct JpegErrors {
  jpeg_error_mgr manager;  // first: libjpeg hands its address to the callbacks
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void jpeg_fail(j_common_ptr info) {
  auto* errors = reinterpret_cast<JpegErrors*>(info->err);
  errors->manager.format_message(info, errors->message);
  std::longjmp(errors->jump, 1);
}

// Level -1 is a warning: corrupt data that libjpeg would decode as grey. Others are traces.
void jpeg_warn(j_common_ptr info, int level) {
  if (level < 0) jpeg_fail(info);
}

struct JpegDecoder {
  jpeg_decompress_struct info{};
  JpegErrors errors{};
  JpegDecoder() {
    info.err = jpeg_std_error(&errors.manager);
    errors.manager.error_exit = jpeg_fail;
    errors.manager.emit_message = jpeg_warn;
  }
  ~JpegDecoder() { jpeg_destroy_decompress(&info); }
};

// Refuses a JPEG stored in a colour space that libjpeg does not convert to RGB, naming it.
void check_jpeg_colour_space(const jpeg_decompress_struct& info, const std::string& path) {
  const J_COLOR_SPACE space = info.jpeg_color_space;
  if (space == JCS_GRAYSCALE || space == JCS_RGB || space == JCS_YCbCr) return;
  const char* name = space == JCS_CMYK   ? "CMYK"
                     : space == JCS_YCCK ? "YCCK (CMYK, as Adobe stores it)"
                                         : "an unknown";
  throw Error(str_cat(kWhat, path, ": a JPEG in ", name, " colour space (", info.num_components,
                      " components); only grayscale, RGB and YCbCr JPEGs are read: convert it to "
                      "RGB first (e.g. ImageMagick: convert FILE -colorspace sRGB FILE)"));
}

RgbImage decode_jpeg(const std::vector<uint8_t>& bytes, const std::string& path,
                     const DecodeReserve& reserve) {
  JpegDecoder d;
  jpeg_decompress_struct& info = d.info;
  const bool header = guarded(d.errors.jump, [&] {
    jpeg_create_decompress(&info);
    jpeg_mem_src(&info, bytes.data(), static_cast<unsigned long>(bytes.size()));
    jpeg_read_header(&info, TRUE);
    info.out_color_space = JCS_RGB;
    jpeg_calc_output_dimensions(&info);
  });
  RT_CHECK(header, kWhat, path, ": cannot decode as JPEG: ", d.errors.message);
  check_jpeg_colour_space(info, path);
  // Note: a progressive JPEG holds all its coefficients (2 bytes each) while it decodes.
  const int64_t coefficients =
      info.progressive_mode ? int64_t{info.image_height} * info.image_width * info.num_components
                            : 0;
  announce(path, info.output_height, info.output_width, 2 * coefficients, reserve);
  const bool started = guarded(d.errors.jump, [&] { jpeg_start_decompress(&info); });
  RT_CHECK(started, kWhat, path, ": cannot decode as JPEG: ", d.errors.message);
  RT_CHECK(info.output_components == 3, kWhat, path, ": libjpeg gave ", info.output_components,
           " components instead of RGB");
  RgbImage image = blank_image(info.output_height, info.output_width);
  const size_t stride = size_t{info.output_width} * 3;
  const bool read = guarded(d.errors.jump, [&] {
    while (info.output_scanline < info.output_height) {
      JSAMPROW row = image.pixels.data() + info.output_scanline * stride;
      jpeg_read_scanlines(&info, &row, 1);
    }
    jpeg_finish_decompress(&info);
  });
  RT_CHECK(read, kWhat, path, ": corrupt JPEG: ", d.errors.message);
  return image;
}

// libpng's reader of a file held in memory, with where to jump on an error and its message.
struct PngDecoder {
  png_structp png = nullptr;
  png_infop info = nullptr;
  const std::vector<uint8_t>* bytes = nullptr;
  size_t at = 0;
  std::jmp_buf jump;
  char message[256] = "";
  ~PngDecoder() { png_destroy_read_struct(&png, &info, nullptr); }
};

[[noreturn]] void png_fail(png_structp png, png_const_charp message) {
  auto* d = static_cast<PngDecoder*>(png_get_error_ptr(png));
  std::snprintf(d->message, sizeof d->message, "%s", message);
  std::longjmp(d->jump, 1);
}

// libpng warns about what does not change the pixels (an odd colour profile, say).
void png_warning_ignored(png_structp, png_const_charp) {}

void png_read_bytes(png_structp png, png_bytep out, size_t count) {
  auto* d = static_cast<PngDecoder*>(png_get_io_ptr(png));
  if (d->bytes->size() - d->at < count) png_error(png, "the file ends early (truncated)");
  std::memcpy(out, d->bytes->data() + d->at, count);
  d->at += count;
}

// Asks libpng for 8-bit RGB whatever the file holds, by the policy of decode_image.
void request_rgb8(png_structp png, png_infop info) {
  const int color = png_get_color_type(png, info);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && png_get_bit_depth(png, info) < 8)
    png_set_expand_gray_1_2_4_to_8(png);
  if (png_get_bit_depth(png, info) == 16) png_set_strip_16(png);
  if ((color & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS))
    png_set_strip_alpha(png);
  if (!(color & PNG_COLOR_MASK_COLOR)) png_set_gray_to_rgb(png);
}

RgbImage decode_png(const std::vector<uint8_t>& bytes, const std::string& path,
                    const DecodeReserve& reserve) {
  PngDecoder d;
  d.bytes = &bytes;
  d.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &d, png_fail, png_warning_ignored);
  RT_CHECK(d.png, kWhat, path, ": png_create_read_struct failed (out of memory?)");
  int passes = 0;
  const bool started = guarded(d.jump, [&] {
    d.info = png_create_info_struct(d.png);
    if (!d.info) png_error(d.png, "png_create_info_struct failed (out of memory?)");
    png_set_read_fn(d.png, &d, png_read_bytes);
    png_read_info(d.png, d.info);
    request_rgb8(d.png, d.info);
    passes = png_set_interlace_handling(d.png);
    png_read_update_info(d.png, d.info);
  });
  RT_CHECK(started, kWhat, path, ": cannot decode as PNG: ", d.message);
  const png_uint_32 height = png_get_image_height(d.png, d.info);
  const png_uint_32 width = png_get_image_width(d.png, d.info);
  RT_CHECK(png_get_channels(d.png, d.info) == 3 && png_get_bit_depth(d.png, d.info) == 8, kWhat,
           path, ": libpng gave ", int{png_get_channels(d.png, d.info)}, " channels of ",
           int{png_get_bit_depth(d.png, d.info)}, " bits instead of 8-bit RGB");
  announce(path, height, width, 0, reserve);
  RgbImage image = blank_image(height, width);
  const bool read = guarded(d.jump, [&] {
    for (int pass = 0; pass < passes; ++pass)
      for (png_uint_32 y = 0; y < height; ++y)
        png_read_row(d.png, image.pixels.data() + size_t{y} * width * 3, nullptr);
    png_read_end(d.png, nullptr);
  });
  RT_CHECK(read, kWhat, path, ": corrupt PNG: ", d.message);
  return image;
}

// Filter taps along one axis of resize_and_crop: output position o reads the `count[o]` source
// positions from first[o] on, with weights[o * taps + k].
struct AxisTaps {
  int taps = 0;
  std::vector<int> first, count;
  std::vector<float> weights;
};

AxisTaps axis_taps(int in, int out, double scale) {
  const double offset = (in * scale - out) / 2, support = std::max(1.0, 1.0 / scale);
  AxisTaps t;
  t.taps = static_cast<int>(std::ceil(2 * support)) + 1;
  t.first.resize(static_cast<size_t>(out));
  t.count.resize(static_cast<size_t>(out));
  t.weights.assign(static_cast<size_t>(out) * t.taps, 0.0f);
  std::vector<double> w(static_cast<size_t>(t.taps));
  for (int o = 0; o < out; ++o) {
    const double centre = (o + 0.5 + offset) / scale - 0.5;
    const int lo = std::max(0, static_cast<int>(std::ceil(centre - support)));
    const int hi =
        std::min({in - 1, static_cast<int>(std::floor(centre + support)), lo + t.taps - 1});
    double sum = 0;
    for (int k = 0; k <= hi - lo; ++k) {
      w[k] = std::max(0.0, 1 - std::fabs(lo + k - centre) / support);
      sum += w[k];
    }
    t.first[o] = lo;
    t.count[o] = hi - lo + 1;
    for (int k = 0; k <= hi - lo; ++k)
      t.weights[size_t(o) * t.taps + k] = static_cast<float>(w[k] / sum);
  }
  return t;
}

// Every source row filtered to the output's columns, in float.
std::vector<float> filter_columns(const RgbImage& src, const AxisTaps& cols, int width) {
  std::vector<float> wide(static_cast<size_t>(src.height) * width * 3, 0.0f);
  for (int y = 0; y < src.height; ++y)
    for (int x = 0; x < width; ++x) {
      float* out = &wide[(size_t(y) * width + x) * 3];
      for (int k = 0; k < cols.count[x]; ++k) {
        const float w = cols.weights[size_t(x) * cols.taps + k];
        const uint8_t* in = &src.pixels[(size_t(y) * src.width + cols.first[x] + k) * 3];
        for (int c = 0; c < 3; ++c) out[c] += w * in[c];
      }
    }
  return wide;
}

// The filtered rows filtered to the output's `height` rows of `width` pixels, rounded to the
// nearest integer.
void filter_rows(const std::vector<float>& wide, const AxisTaps& rows, int height, int width,
                 uint8_t* out) {
  const size_t row_values = size_t(width) * 3;
  for (int y = 0; y < height; ++y)
    for (size_t i = 0; i < row_values; ++i) {
      float v = 0;
      for (int k = 0; k < rows.count[y]; ++k)
        v += rows.weights[size_t(y) * rows.taps + k] *
             wide[(size_t(rows.first[y]) + k) * row_values + i];
      out[y * row_values + i] = static_cast<uint8_t>(std::clamp(v, 0.0f, 255.0f) + 0.5f);
    }
}

}  // namespace

RgbImage decode_image(const std::string& path, const DecodeReserve& reserve) {
  const std::vector<uint8_t> bytes = read_file(path);
  static const uint8_t kPngSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (bytes.size() >= 8 && std::memcmp(bytes.data(), kPngSignature, 8) == 0)
    return decode_png(bytes, path, reserve);
  if (bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF)
    return decode_jpeg(bytes, path, reserve);
  RT_CHECK(!bytes.empty(), kWhat, path, ": empty file: remove it or replace it with the image");
  throw Error(str_cat(kWhat, path,
                      ": neither a PNG nor a JPEG file (by its first bytes): remove it or "
                      "convert it to PNG"));
}

void resize_and_crop(const RgbImage& src, int height, int width, uint8_t* out) {
  if (src.height == height && src.width == width) {
    std::memcpy(out, src.pixels.data(), src.pixels.size());
    return;
  }
  const double scale =
      std::max(static_cast<double>(height) / src.height, static_cast<double>(width) / src.width);
  filter_rows(filter_columns(src, axis_taps(src.width, width, scale), width),
              axis_taps(src.height, height, scale), height, width, out);
}

RgbImage resize_and_crop(const RgbImage& src, int height, int width) {
  RgbImage out = blank_image(height, width);
  resize_and_crop(src, height, width, out.pixels.data());
  return out;
}

int64_t resize_bytes(int source_height, int width) {
  return int64_t{source_height} * width * 3 * static_cast<int64_t>(sizeof(float));
}

}  // namespace ringtrain
