#pragma once
// PNG and JPEG files written and read with libpng and libjpeg directly, for the image-folder
// importer's tests: the sources of a tree, and a reference decode independent of the importer.
#include <gtest/gtest.h>
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <filesystem>
#include <vector>

#include <jpeglib.h>

namespace ringtrain::test {

// A PNG's header: data holds `height` rows of raw PNG samples (16-bit ones big-endian).
struct PngSpec {
  int width = 0, height = 0;
  int color_type = PNG_COLOR_TYPE_RGB;
  int bit_depth = 8;
  bool interlaced = false;
  std::vector<png_color> palette;
  std::vector<uint8_t> palette_alpha;  // a tRNS chunk
};

inline void write_png(const std::filesystem::path& file, const PngSpec& spec,
                      const std::vector<uint8_t>& data) {
  std::FILE* f = std::fopen(file.c_str(), "wb");
  ASSERT_NE(f, nullptr) << file;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  std::vector<png_bytep> rows;
  const size_t row_bytes = data.size() / static_cast<size_t>(spec.height);
  for (int y = 0; y < spec.height; ++y)
    rows.push_back(const_cast<uint8_t*>(data.data()) + static_cast<size_t>(y) * row_bytes);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    std::fclose(f);
    FAIL() << "libpng could not write " << file;
  }
  png_init_io(png, f);
  png_set_IHDR(png, info, static_cast<png_uint_32>(spec.width),
               static_cast<png_uint_32>(spec.height), spec.bit_depth, spec.color_type,
               spec.interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (!spec.palette.empty())
    png_set_PLTE(png, info, spec.palette.data(), static_cast<int>(spec.palette.size()));
  if (!spec.palette_alpha.empty())
    png_set_tRNS(png, info, spec.palette_alpha.data(), static_cast<int>(spec.palette_alpha.size()),
                 nullptr);
  png_write_info(png, info);
  png_write_image(png, rows.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  ASSERT_EQ(std::fclose(f), 0) << file;
}

// Writes 8-bit samples (3 components: RGB, 1: grayscale, 4: CMYK) as a baseline JPEG with
// libjpeg's defaults (4:2:0 chroma subsampling for colour; CMYK stored as CMYK). libjpeg's own
// error handler exits on failure.
inline void write_jpeg(const std::filesystem::path& file, int width, int height, int components,
                       const std::vector<uint8_t>& data, int quality) {
  std::FILE* f = std::fopen(file.c_str(), "wb");
  ASSERT_NE(f, nullptr) << file;
  jpeg_compress_struct info{};
  jpeg_error_mgr errors{};
  info.err = jpeg_std_error(&errors);
  jpeg_create_compress(&info);
  jpeg_stdio_dest(&info, f);
  info.image_width = static_cast<JDIMENSION>(width);
  info.image_height = static_cast<JDIMENSION>(height);
  info.input_components = components;
  info.in_color_space = components == 4 ? JCS_CMYK : components == 3 ? JCS_RGB : JCS_GRAYSCALE;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, quality, TRUE);
  jpeg_start_compress(&info, TRUE);
  while (info.next_scanline < info.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(data.data()) +
                   static_cast<size_t>(info.next_scanline) * width * components;
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  jpeg_destroy_compress(&info);
  ASSERT_EQ(std::fclose(f), 0) << file;
}

// libjpeg's decode of a file with its defaults, in the file's own colour space (RGB or
// grayscale), and that space's component count.
inline std::vector<uint8_t> read_jpeg(const std::filesystem::path& file, int& components) {
  std::FILE* f = std::fopen(file.c_str(), "rb");
  EXPECT_NE(f, nullptr) << file;
  if (!f) return {};
  jpeg_decompress_struct info{};
  jpeg_error_mgr errors{};
  info.err = jpeg_std_error(&errors);
  jpeg_create_decompress(&info);
  jpeg_stdio_src(&info, f);
  jpeg_read_header(&info, TRUE);
  jpeg_start_decompress(&info);
  components = info.output_components;
  std::vector<uint8_t> out(size_t{info.output_width} * info.output_height * components);
  while (info.output_scanline < info.output_height) {
    JSAMPROW row = out.data() + size_t{info.output_scanline} * info.output_width * components;
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  std::fclose(f);
  return out;
}

}  // namespace ringtrain::test
