// The image-folder importer (`data import-images`): trees of PNG and JPEG files written here
// import to exactly their pixels (PNG: the samples written; JPEG: libjpeg's own decode), in
// ImageFolder's class and file order, with the train statistics and provenance stored, the same
// file for any worker count; resizing follows its documented filter.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <random>

#include "image_files.hpp"
#include "ringtrain/core/error.hpp"
#include "ringtrain/core/hash.hpp"
#include "ringtrain/core/hdf5_file.hpp"
#include "ringtrain/core/version.hpp"
#include "ringtrain/data/hdf5_io.hpp"
#include "ringtrain/import/image_decode.hpp"
#include "ringtrain/import/image_folder.hpp"
#include "ringtrain/loader/augment.hpp"
#include "test_util.hpp"

namespace ringtrain {
namespace {

namespace fs = std::filesystem;
using Pixels = std::vector<uint8_t>;
using test::PngSpec;

constexpr int kH = 5, kW = 7;  // the size of the trees' images: odd, not square
const std::string kUtf8Class =
    "\xC3\xB1"
    "and\xC3\xBA";  // "ñandú"

// An empty folder in this test process's temporary folder.
fs::path fresh_dir(const std::string& name) {
  const fs::path dir = test::temp_path("import_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

Pixels random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  Pixels out(n);
  for (auto& v : out) v = static_cast<uint8_t>(rng());
  return out;
}

// Gradients and a soft wave per channel: content JPEG keeps close to its source.
Pixels smooth(int h, int w, int channels, uint32_t seed) {
  Pixels out(static_cast<size_t>(h) * w * channels);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < channels; ++c)
        out[(static_cast<size_t>(y) * w + x) * channels + c] = static_cast<uint8_t>(
            110 + 60 * std::sin(0.3 * x + 0.2 * y + seed + 0.3 * c) + 4 * (x - y) + 10 * c);
  return out;
}

// The first `keep` of every `stride` samples: RGBA to RGB, grey+alpha to grey, the high bytes
// of 16-bit samples.
Pixels take(const Pixels& in, int stride, int keep) {
  Pixels out;
  for (size_t i = 0; i < in.size(); i += static_cast<size_t>(stride))
    out.insert(out.end(), in.begin() + static_cast<std::ptrdiff_t>(i),
               in.begin() + static_cast<std::ptrdiff_t>(i + static_cast<size_t>(keep)));
  return out;
}

Pixels gray_to_rgb(const Pixels& gray) {
  Pixels out;
  for (uint8_t v : gray) out.insert(out.end(), {v, v, v});
  return out;
}

// One image of a tree and the RGB the importer must store for it.
struct Expected {
  fs::path file;
  Pixels rgb;
  Pixels source;  // JPEG: the samples encoded
};

Expected png(const fs::path& file, PngSpec spec, const Pixels& data, const Pixels& rgb) {
  fs::create_directories(file.parent_path());
  test::write_png(file, spec, data);
  return {file, rgb, {}};
}

Expected rgb_png(const fs::path& file, uint32_t seed, bool interlaced = false, int h = kH,
                 int w = kW) {
  const Pixels data = random_bytes(static_cast<size_t>(h) * w * 3, seed);
  return png(file, {w, h, PNG_COLOR_TYPE_RGB, 8, interlaced, {}, {}}, data, data);
}

Expected rgba_png(const fs::path& file, uint32_t seed) {
  const Pixels data = random_bytes(kH * kW * 4, seed);
  return png(file, {kW, kH, PNG_COLOR_TYPE_RGBA, 8, false, {}, {}}, data, take(data, 4, 3));
}

Expected gray_png(const fs::path& file, uint32_t seed, bool with_alpha) {
  const int samples = with_alpha ? 2 : 1;
  const Pixels data = random_bytes(kH * kW * samples, seed);
  const int type = with_alpha ? PNG_COLOR_TYPE_GRAY_ALPHA : PNG_COLOR_TYPE_GRAY;
  return png(file, {kW, kH, type, 8, false, {}, {}}, data, gray_to_rgb(take(data, samples, 1)));
}

// 16-bit RGB, Adam7-interlaced: stored as the high bytes.
Expected rgb16_png(const fs::path& file, uint32_t seed) {
  const Pixels data = random_bytes(kH * kW * 6, seed);
  return png(file, {kW, kH, PNG_COLOR_TYPE_RGB, 16, true, {}, {}}, data, take(data, 2, 1));
}

// Four palette entries, two of them partly transparent (tRNS): stored as the entries' RGB.
Expected palette_png(const fs::path& file, uint32_t seed) {
  const std::vector<png_color> palette = {{10, 20, 30}, {200, 100, 0}, {0, 255, 128}, {7, 7, 250}};
  Pixels indices = random_bytes(kH * kW, seed), rgb;
  for (auto& i : indices) {
    i %= 4;
    rgb.insert(rgb.end(), {palette[i].red, palette[i].green, palette[i].blue});
  }
  return png(file, {kW, kH, PNG_COLOR_TYPE_PALETTE, 8, false, palette, {0, 128}}, indices, rgb);
}

// A JPEG of smooth content; grayscale ones are stored with the grey in R, G and B.
Expected jpeg(const fs::path& file, uint32_t seed, int components, int h = kH, int w = kW) {
  fs::create_directories(file.parent_path());
  const Pixels source = smooth(h, w, components, seed);
  test::write_jpeg(file, w, h, components, source, 95);
  int decoded_components = 0;
  const Pixels decoded = test::read_jpeg(file, decoded_components);
  EXPECT_EQ(decoded_components, components);
  return {file, components == 3 ? decoded : gray_to_rgb(decoded),
          components == 3 ? source : gray_to_rgb(source)};
}

// A tree of every kind of image, listed in ImageFolder's order: classes sorted as bytes
// ("Zebra" < "cat" < "ñandú"), each class's folder before its subfolders, names sorted.
struct Tree {
  fs::path dir;
  std::vector<Expected> train, test;
};

Tree kinds_tree(const std::string& name) {
  Tree t{fresh_dir(name), {}, {}};
  const fs::path train = t.dir / "train", test = t.dir / "test";
  t.train = {rgb16_png(train / "Zebra" / "x.png", 1),
             jpeg(train / "Zebra" / "z.jpeg", 2, 1),
             gray_png(train / "cat" / "a.PNG", 3, false),
             rgb_png(train / "cat" / "b.png", 4),
             jpeg(train / "cat" / "u.jpg", 5, 3),
             rgba_png(train / "cat" / "sub" / "d.png", 6),
             gray_png(train / kUtf8Class / "n.png", 7, true),
             palette_png(train / kUtf8Class / "p.png", 8)};
  t.test = {jpeg(test / "Zebra" / "t.jpg", 9, 3), rgb_png(test / "cat" / "t.png", 10, true),
            rgba_png(test / kUtf8Class / "t.png", 11)};
  std::ofstream(train / "cat" / "notes.txt") << "not an image\n";
  std::ofstream(train / "README") << "not in a class folder\n";
  return t;
}

ImportConfig config_for(const fs::path& dir, int workers = 1) {
  ImportConfig c;
  c.dir = dir.string();
  c.out = (dir / "out.h5").string();
  c.workers = workers;
  return c;
}

void expect_split(const Split& s, const std::vector<Expected>& images,
                  const std::vector<int32_t>& labels) {
  ASSERT_EQ(s.count, static_cast<int64_t>(images.size()));
  ASSERT_EQ(s.height, kH);
  ASSERT_EQ(s.width, kW);
  ASSERT_EQ(s.channels, 3);
  EXPECT_EQ(s.labels, labels);
  for (size_t i = 0; i < images.size(); ++i)
    EXPECT_EQ(Pixels(s.image(static_cast<int64_t>(i)), s.image(static_cast<int64_t>(i + 1))),
              images[i].rgb)
        << images[i].file;
}

TEST(ImageFolder, EveryKindOfImageImportsToItsPixelsInImageFolderOrder) {
  const Tree tree = kinds_tree("kinds");
  const ImportConfig c = config_for(tree.dir);
  const ImportSummary summary = import_image_folder(c);
  EXPECT_EQ(summary.skipped, 2);  // cat/notes.txt and train/README
  const Dataset d = read_hdf5_dataset(c.out);
  EXPECT_EQ(d.class_names, (std::vector<std::string>{"Zebra", "cat", kUtf8Class}));
  expect_split(d.train, tree.train, {0, 0, 1, 1, 1, 1, 2, 2});
  expect_split(d.test, tree.test, {0, 1, 2});
}

// Quality 95 with 4:2:0 chroma on smooth content: the stored pixels stay within 16 levels of each
// encoded sample and 4 on average (measured: 9 and 1.9 in colour, 2 and 0.7 in grey); a wrong
// channel order or colour space would be off by tens.
TEST(ImageFolder, JpegPixelsStayCloseToWhatWasEncoded) {
  const Tree tree = kinds_tree("jpeg_source");
  const ImportConfig c = config_for(tree.dir);
  import_image_folder(c);
  const Dataset d = read_hdf5_dataset(c.out);
  for (size_t i = 0; i < tree.train.size(); ++i) {
    if (tree.train[i].source.empty()) continue;
    const uint8_t* stored = d.train.image(static_cast<int64_t>(i));
    int worst = 0;
    double total = 0;
    for (size_t k = 0; k < tree.train[i].source.size(); ++k) {
      const int diff = std::abs(stored[k] - tree.train[i].source[k]);
      worst = std::max(worst, diff);
      total += diff;
    }
    EXPECT_LE(worst, 16) << tree.train[i].file;
    EXPECT_LE(total / tree.train[i].source.size(), 4.0) << tree.train[i].file;
  }
}

// A file attribute of a written dataset, opened for reading.
struct Attribute {
  Hdf5Handle file, attr;
  Attribute(const std::string& path, const char* name)
      : file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose),
        attr(H5Aopen(file.get(), name, H5P_DEFAULT), H5Aclose) {
    EXPECT_TRUE(attr.ok()) << path << ": " << name;
  }
};

std::vector<double> read_numbers(const std::string& file, const char* name) {
  const Attribute a(file, name);
  Hdf5Handle space(H5Aget_space(a.attr.get()), H5Sclose);
  std::vector<double> values(static_cast<size_t>(H5Sget_simple_extent_npoints(space.get())));
  EXPECT_GE(H5Aread(a.attr.get(), H5T_NATIVE_DOUBLE, values.data()), 0) << name;
  return values;
}

std::string read_text(const std::string& file, const char* name) {
  const Attribute a(file, name);
  Hdf5Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), H5T_VARIABLE);
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  char* raw = nullptr;
  EXPECT_GE(H5Aread(a.attr.get(), type.get(), &raw), 0) << name;
  const std::string text = raw ? raw : "";
  H5free_memory(raw);
  return text;
}

TEST(ImageFolder, StoresTrainStatisticsAndProvenance) {
  const Tree tree = kinds_tree("attributes");
  const ImportConfig c = config_for(tree.dir);
  import_image_folder(c);
  const Dataset d = read_hdf5_dataset(c.out);
  const std::vector<double> mean = read_numbers(c.out, "channel_mean");
  const std::vector<double> stdev = read_numbers(c.out, "channel_std");
  ASSERT_EQ(mean.size(), 3u);
  ASSERT_EQ(stdev.size(), 3u);
  const Normalization loader = channel_statistics(d.train);
  const double pixels = static_cast<double>(d.train.images.size() / 3);
  for (int c3 = 0; c3 < 3; ++c3) {
    double sum = 0, squares = 0;
    for (size_t i = c3; i < d.train.images.size(); i += 3) sum += d.train.images[i] / 255.0;
    for (size_t i = c3; i < d.train.images.size(); i += 3)
      squares += std::pow(d.train.images[i] / 255.0 - sum / pixels, 2);
    EXPECT_NEAR(mean[c3], sum / pixels, 1e-12);  // two-pass f64: only rounding differs
    EXPECT_NEAR(stdev[c3], std::sqrt(squares / pixels), 1e-12);
    EXPECT_NEAR(mean[c3], loader.mean[c3], 1e-6);  // the loader's float statistics
    EXPECT_NEAR(stdev[c3], loader.std[c3], 1e-6);
  }
  uint64_t hash = 0;
  for (const Split* s : {&d.train, &d.test}) {
    hash = xxh64(s->images.data(), s->images.size(), hash);
    hash = xxh64(s->labels.data(), s->labels.size() * 4, hash);
  }
  EXPECT_EQ(read_text(c.out, "content_xxh64"), hex64(hash));
  EXPECT_EQ(read_text(c.out, "source_dir"), fs::canonical(tree.dir).string());
  EXPECT_EQ(read_text(c.out, "importer"), "ringtrain data import-images");
  EXPECT_EQ(read_text(c.out, "importer_version"), RINGTRAIN_VERSION);
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The sum of the times (access, modification, change, birth) an object of a file keeps.
int64_t object_times(hid_t file, const char* name) {
#if H5_VERSION_GE(1, 12, 0)
  H5O_info2_t info{};
  EXPECT_GE(H5Oget_info_by_name3(file, name, &info, H5O_INFO_TIME, H5P_DEFAULT), 0) << name;
#else
  H5O_info_t info{};
  EXPECT_GE(H5Oget_info_by_name2(file, name, &info, H5O_INFO_TIME, H5P_DEFAULT), 0) << name;
#endif
  return static_cast<int64_t>(info.atime) + info.mtime + info.ctime + info.btime;
}

TEST(ImageFolder, SameFileForAnyWorkerCount) {
  const fs::path dir = fresh_dir("workers");
  for (int i = 0; i < 36; ++i) {
    const fs::path folder =
        dir / (i % 4 == 0 ? "test" : "train") / ("class" + std::to_string(i % 3));
    const std::string stem = "img" + std::to_string(i);
    if (i % 2)
      rgb_png(folder / (stem + ".png"), static_cast<uint32_t>(i));
    else
      jpeg(folder / (stem + ".jpg"), static_cast<uint32_t>(i), 3);
  }
  ImportConfig one = config_for(dir, 1), three = config_for(dir, 3);
  three.out = (dir / "three.h5").string();
  std::vector<std::pair<int64_t, int64_t>> calls;
  three.progress = [&](int64_t done, int64_t total) { calls.emplace_back(done, total); };
  import_image_folder(one);
  import_image_folder(three);
  EXPECT_EQ(file_bytes(one.out), file_bytes(three.out));
  // Nor do they depend on when the file was written: its objects keep no times.
  Hdf5Handle file(H5Fopen(one.out.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  for (const char* name : {"/train", "/test/images", "/test/labels"})
    EXPECT_EQ(object_times(file.get(), name), 0) << name;
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.back(), std::make_pair(int64_t{36}, int64_t{36}));
  for (size_t i = 1; i < calls.size(); ++i) EXPECT_GT(calls[i].first, calls[i - 1].first);
}

// The documented filter, written out in f64 for one output value: source rows and columns
// weighted by the product of their triangle weights, renormalised.
double reference_resize(const RgbImage& src, int height, int width, int y, int x, int c) {
  const double s = std::max(double(height) / src.height, double(width) / src.width);
  const auto weight = [s](int i, int o, int in, int out) {
    const double centre = (o + 0.5 + (in * s - out) / 2) / s - 0.5, r = std::max(1.0, 1 / s);
    return std::max(0.0, 1 - std::fabs(i - centre) / r);
  };
  double sum = 0, weights = 0;
  for (int i = 0; i < src.height; ++i)
    for (int j = 0; j < src.width; ++j) {
      const double w = weight(i, y, src.height, height) * weight(j, x, src.width, width);
      sum += w * src.pixels[(size_t(i) * src.width + j) * 3 + c];
      weights += w;
    }
  return sum / weights;
}

RgbImage random_image(int h, int w, uint32_t seed) {
  return {h, w, random_bytes(static_cast<size_t>(h) * w * 3, seed)};
}

// Float in the implementation against f64 here: a value a hair from .5 may round either way.
TEST(ImageFolder, ResizeIsTheDocumentedCoverCropFilter) {
  const int sizes[][2] = {{1, 1}, {3, 9}, {17, 11}, {40, 20}, {6, 4}, {2, 200}};
  for (const auto& size : sizes) {
    const RgbImage src = random_image(size[0], size[1], 5);
    const RgbImage out = resize_and_crop(src, 6, 4);
    ASSERT_EQ(out.height, 6);
    ASSERT_EQ(out.width, 4);
    for (int y = 0; y < 6; ++y)
      for (int x = 0; x < 4; ++x)
        for (int c = 0; c < 3; ++c)
          EXPECT_NEAR(out.pixels[(size_t(y) * 4 + x) * 3 + c], reference_resize(src, 6, 4, y, x, c),
                      0.5 + 1e-3)
              << size[0] << "x" << size[1] << " at " << y << "," << x << "," << c;
  }
  // By hand: 2 columns to 4 (0.75/0.25 mixes), 4 columns to 2 (taps .75 .75 .25 / 1.75).
  const RgbImage up = resize_and_crop({1, 2, {0, 0, 0, 255, 255, 255}}, 1, 4);
  EXPECT_EQ(take(up.pixels, 3, 1), (Pixels{0, 64, 191, 255}));
  const RgbImage down =
      resize_and_crop({2, 4, gray_to_rgb({0, 100, 200, 40, 0, 100, 200, 40})}, 1, 2);
  EXPECT_EQ(take(down.pixels, 3, 1), (Pixels{71, 117}));
}

TEST(ImageFolder, SizeOptionBringsEveryImageToItIncludingOnePixel) {
  const fs::path dir = fresh_dir("resize");
  const std::vector<Expected> train = {rgb_png(dir / "train" / "a" / "one.png", 1, false, 1, 1),
                                       jpeg(dir / "train" / "a" / "wide.jpg", 2, 3, 9, 30),
                                       rgb_png(dir / "train" / "b" / "tall.png", 3, true, 40, 3)};
  rgb_png(dir / "test" / "a" / "t.png", 4);
  rgb_png(dir / "test" / "b" / "t.png", 5);
  ImportConfig c = config_for(dir, 2);
  c.height = 6;
  c.width = 4;
  import_image_folder(c);
  const Dataset d = read_hdf5_dataset(c.out);
  ASSERT_EQ(d.train.height, 6);
  ASSERT_EQ(d.train.width, 4);
  const Pixels one = train[0].rgb;
  for (int p = 0; p < 24; ++p)  // a single pixel scaled up is that pixel everywhere
    EXPECT_EQ(Pixels(d.train.image(0) + 3 * p, d.train.image(0) + 3 * p + 3), one);
  for (int i = 1; i < 3; ++i) {
    const RgbImage src{i == 1 ? 9 : 40, i == 1 ? 30 : 3, train[i].rgb};
    for (int k = 0; k < 72; ++k)
      EXPECT_NEAR(d.train.image(i)[k], reference_resize(src, 6, 4, k / 12, k / 3 % 4, k % 3),
                  0.5 + 1e-3)
          << train[i].file;
  }
}

// A valid tree of two classes, one PNG each per split.
fs::path small_tree(const std::string& name) {
  const fs::path dir = fresh_dir(name);
  for (const char* split : {"train", "test"})
    for (const char* cls : {"a", "b"}) rgb_png(dir / split / cls / "0.png", 1);
  return dir;
}

std::string import_error(const ImportConfig& c) {
  try {
    import_image_folder(c);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

void expect_no_output(const ImportConfig& c) {
  EXPECT_FALSE(fs::exists(c.out)) << c.out;
  EXPECT_FALSE(fs::exists(c.out + ".tmp")) << c.out << ".tmp";
}

#define EXPECT_MENTIONS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

TEST(ImageFolderErrors, CorruptFilesAreNamedAndLeaveNoOutput) {
  const fs::path dir = small_tree("corrupt");
  const fs::path png_file = dir / "train" / "a" / "1.png",
                 jpeg_file = dir / "train" / "a" / "2.jpg";
  const auto truncated = [](const fs::path& file, size_t keep) {
    const std::string bytes = file_bytes(file.string());
    std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes.substr(0, keep);
  };
  const std::vector<std::pair<std::function<void()>, const char*>> cases = {
      {[&] {
         rgb_png(png_file, 2);
         truncated(png_file, file_bytes(png_file.string()).size() - 20);
       },
       "corrupt PNG"},
      {[&] {
         jpeg(jpeg_file, 3, 3);
         const std::string bytes = file_bytes(jpeg_file.string());
         truncated(jpeg_file, (bytes.find("\xFF\xDA") + bytes.size()) / 2);  // in the scan
       },
       "corrupt JPEG: Premature end of JPEG file"},
      {[&] { test::write_jpeg(jpeg_file, kW, kH, 4, smooth(kH, kW, 4, 3), 90); },
       "a JPEG in CMYK colour space (4 components); only grayscale, RGB and YCbCr JPEGs "
       "are read: convert it to RGB first"},
      {[&] { std::ofstream(jpeg_file) << "hello"; }, "neither a PNG nor a JPEG"},
      {[&] { std::ofstream{png_file}; }, "empty file"},
  };
  for (const auto& [make, reason] : cases) {
    fs::remove(png_file);
    fs::remove(jpeg_file);
    make();
    const ImportConfig c = config_for(dir, 2);
    const std::string error = import_error(c);
    EXPECT_MENTIONS(error, fs::exists(png_file) ? png_file.string() : jpeg_file.string());
    EXPECT_MENTIONS(error, reason);
    expect_no_output(c);
  }
}

TEST(ImageFolderErrors, FolderProblemsAreNamed) {
  const fs::path dir = small_tree("folders");
  fs::create_directories(dir / "train" / "empty" / "sub");
  std::ofstream(dir / "train" / "empty" / "sub" / "x.txt") << "no image\n";
  EXPECT_MENTIONS(import_error(config_for(dir)),
                  (dir / "train" / "empty").string() + ": an empty class folder");
  fs::remove_all(dir / "train" / "empty");
  fs::rename(dir / "test" / "b", dir / "test" / "c");
  std::string error = import_error(config_for(dir));
  EXPECT_MENTIONS(error, (dir / "test" / "b").string() + ": missing");
  rgb_png(dir / "test" / "b" / "0.png", 1);
  error = import_error(config_for(dir));
  EXPECT_MENTIONS(error, (dir / "test" / "c").string() + ": a class folder that");
  fs::remove_all(dir / "test");
  EXPECT_MENTIONS(import_error(config_for(dir)), (dir / "test").string() + ": no such folder");
  fs::rename(dir / "train", dir / "training");
  EXPECT_MENTIONS(import_error(config_for(dir)), (dir / "train").string() + ": no such folder");
  ImportConfig c = config_for(dir / "nowhere");
  c.out = (dir / "out.h5").string();
  EXPECT_MENTIONS(import_error(c), (dir / "nowhere").string() + ": no such folder");
}

TEST(ImageFolderErrors, ADifferentSizeIsNamedWithTheRemedy) {
  const fs::path dir = small_tree("sizes");
  rgb_png(dir / "test" / "b" / "odd.png", 2, false, kH + 1, kW);
  const std::string error = import_error(config_for(dir));
  EXPECT_MENTIONS(error, (dir / "test" / "b" / "odd.png").string() + ": 6x7 pixels");
  EXPECT_MENTIONS(error, "--size");
}

TEST(ImageFolderErrors, OutputIsCheckedBeforeDecoding) {
  const fs::path dir = small_tree("output");
  std::ofstream(dir / "train" / "a" / "bad.png") << "corrupt";
  ImportConfig c = config_for(dir);
  c.out = (dir / "missing" / "out.h5").string();  // a missing folder is made, then decoding fails
  EXPECT_MENTIONS(import_error(c), "bad.png: neither a PNG nor a JPEG");
  EXPECT_TRUE(fs::is_directory(dir / "missing"));
  EXPECT_FALSE(fs::exists(c.out) || fs::exists(c.out + ".tmp"));
  std::ofstream(dir / "notes.txt") << "a file";
  c.out = (dir / "notes.txt" / "out.h5").string();  // a parent that is a file
  EXPECT_MENTIONS(import_error(c), "Not a directory");
  c.out = dir.string();
  EXPECT_MENTIONS(import_error(c), "is a directory: it is not replaced");
  c.out = (dir / "train" / "a" / "out.h5").string();  // the next import would read it as an image
  EXPECT_THROW(import_image_folder(c), ConfigError);
  EXPECT_MENTIONS(import_error(c), c.out + " lies inside " + (dir / "train").string() +
                                       ", which this command reads");
  expect_no_output(c);
  c.out = (dir / "exists.h5").string();
  std::ofstream(c.out) << "old";
  EXPECT_MENTIONS(import_error(c), c.out + ": exists: pass --force");
  fs::remove(dir / "train" / "a" / "bad.png");
  c.force = true;
  import_image_folder(c);
  EXPECT_EQ(read_hdf5_dataset(c.out).train.count, 2);
  EXPECT_FALSE(fs::exists(c.out + ".tmp"));
}

TEST(ImageFolderErrors, SizeTextIsHeightByWidthOrOneSide) {
  int h = 0, w = 0;
  parse_image_size("24x40", h, w);
  EXPECT_EQ(std::make_pair(h, w), std::make_pair(24, 40));
  parse_image_size("32", h, w);
  EXPECT_EQ(std::make_pair(h, w), std::make_pair(32, 32));
  for (const char* bad :
       {"", "0x5", "32x", "x32", "abc", "32x32x3", "70000x1", "-3x4", "3.5", "20000x20000"})
    EXPECT_THROW(parse_image_size(bad, h, w), ConfigError) << bad;
}

// The real CIFAR-10 as JPEG files in class folders, when the tarball is where the build says
// (RINGTRAIN_IMAGE_TARBALL overrides): 20 images per class and split, taken out with tar.
TEST(ImageFolder, RealCifar10JpegSubset) {
  const char* override_path = std::getenv("RINGTRAIN_IMAGE_TARBALL");
  const std::string tarball = override_path ? override_path : RINGTRAIN_TEST_IMAGE_TARBALL;
  if (!fs::exists(tarball))
    GTEST_SKIP() << "no CIFAR-10 JPEG tarball at " << tarball
                 << " (set RINGTRAIN_IMAGE_TARBALL to one elsewhere)";
  const fs::path dir = fresh_dir("cifar10");
  const std::string command = "tar -xzf '" + tarball + "' -C '" + dir.string() +
                              "' --wildcards 'train/*/00[01][0-9].jpg' 'test/*/00[01][0-9].jpg'";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  const ImportConfig c = config_for(dir, 2);
  import_image_folder(c);
  const Dataset d = read_hdf5_dataset(c.out);
  const std::vector<std::string> classes = {"airplane", "automobile", "bird",  "cat",  "deer",
                                            "dog",      "frog",       "horse", "ship", "truck"};
  EXPECT_EQ(d.class_names, classes);
  for (const auto& [name, split] :
       {std::pair<const char*, const Split*>{"train", &d.train}, {"test", &d.test}}) {
    ASSERT_EQ(split->count, 200);
    ASSERT_EQ(split->height, 32);
    ASSERT_EQ(split->width, 32);
    for (int64_t i = 0; i < 200; ++i) {
      ASSERT_EQ(split->labels[i], i / 20);
      char file[16];
      std::snprintf(file, sizeof file, "%04d.jpg", static_cast<int>(i % 20));
      int components = 0;
      const Pixels expected = test::read_jpeg(dir / name / classes[i / 20] / file, components);
      ASSERT_EQ(components, 3);
      EXPECT_EQ(Pixels(split->image(i), split->image(i + 1)), expected) << name << " " << i;
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ringtrain
