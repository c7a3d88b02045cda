#include "winograd.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels.hpp"

namespace ringtrain::cpu {
namespace {

// Eight floats as one vector, which may alias float (as the intrinsics' own types do). Every
// access through it is 32-byte aligned: the buffers are page-aligned and every offset is a
// multiple of eight floats.
typedef float v8 __attribute__((vector_size(32), aligned(32), may_alias));
constexpr int kLanes = 8;
constexpr int kPoints = 36;  // the 6x6 points of the transformed domain

// Note: the tiles of a group of images are transformed, multiplied (36 GEMMs) and transformed
// back before the next group starts. A group's two transformed buffers are kept to about
// kGroupBytes so that they stay in the cache between the three steps (4 MiB: 192 tiles of 32x32
// maps with 64 channels), and so that the pass needs a bounded workspace whatever the batch.
constexpr size_t kGroupBytes = size_t{4} << 20;

// How a map is cut into 4x4 tiles, and how many images one group takes.
struct Tiling {
  int rows, cols;  // tiles down and across
  int per_image;
  int images_per_group;
};

Tiling tiling_of(const ConvGeometry& g) {
  Tiling t{(g.h + 3) / 4, (g.w + 3) / 4, 0, 0};
  t.per_image = t.rows * t.cols;
  const size_t tile_bytes = sizeof(float) * kPoints * (size_t(g.c) + size_t(g.k));
  const size_t tiles = std::max<size_t>(kGroupBytes / tile_bytes, 1);
  t.images_per_group = static_cast<int>(std::clamp<size_t>(tiles / t.per_image, 1, g.n));
  return t;
}

float* reserve(AlignedBuffer& b, int64_t floats) {
  return static_cast<float*>(b.reserve(sizeof(float) * size_t(floats)));
}

// One image's eight channels (planes[lane][y][x], h x w each) as one vector a pixel, zero-padded by
// border pixels on every side and to whole tiles:
// staged[((y + border) * (4 * t.cols + 2 * border) + x + border) * 8 + lane].
void stage(const float* planes, int h, int w, const Tiling& t, int border, float* staged) {
  const int rows = 4 * t.rows + 2 * border, cols = 4 * t.cols + 2 * border;
  std::memset(staged, 0, sizeof(float) * kLanes * rows * cols);
  const int64_t plane = int64_t{h} * w;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      float* pixel = staged + (int64_t{y + border} * cols + x + border) * kLanes;
      for (int lane = 0; lane < kLanes; ++lane) pixel[lane] = planes[lane * plane + y * w + x];
    }
}

// stage's inverse for a border of 0, cropped to h x w.
void unstage(const float* staged, int h, int w, const Tiling& t, float* planes) {
  const int cols = 4 * t.cols;
  const int64_t plane = int64_t{h} * w;
  for (int lane = 0; lane < kLanes; ++lane)
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        planes[lane * plane + y * w + x] = staged[(int64_t{y} * cols + x) * kLanes + lane];
}

// Note: the transforms interpolate at the points 0, +-5/8, +-3/2 and infinity, not at Lavin and
// Gray's 0, +-1, +-2: with those, the input gradient came out 4.6x and the filter gradient 3.7x
// a plain f32 loop's error (F32ConvAccuracy, 8x8 maps); points nearer 1 in size keep the
// transformed values (powers of the points up to the fifth) of one magnitude. They are the points
// oneDNN's AVX-512 Winograd uses. The filter gradient runs F(3x3, 4x4) at the same points, the
// output-gradient tile taking the place of the filter.
//
// The one-dimensional transforms, each y = L x on a line of vectors x[i * xs] -> y[i * ys].
// B^T x, the input transform (6 -> 6).
struct InputLine {
  void operator()(const v8* x, int64_t xs, v8* y, int64_t ys) const {
    const v8 x1 = x[xs], x2 = x[2 * xs], x3 = x[3 * xs], x4 = x[4 * xs];
    const v8 t0 = x4 - 2.25f * x2, t1 = x3 - 2.25f * x1;
    const v8 t2 = x4 - 0.390625f * x2, t3 = x3 - 0.390625f * x1;
    y[0] = 0.87890625f * x[0] - 2.640625f * x2 + x4;
    y[ys] = t0 + 0.625f * t1;
    y[2 * ys] = t0 - 0.625f * t1;
    y[3 * ys] = t2 + 1.5f * t3;
    y[4 * ys] = t2 - 1.5f * t3;
    y[5 * ys] = 0.87890625f * x1 - 2.640625f * x3 + x[5 * xs];
  }
};
// G x, the filter transform (3 -> 6).
struct FilterLine {
  void operator()(const v8* x, int64_t xs, v8* y, int64_t ys) const {
    const v8 x0 = x[0], x1 = x[xs], x2 = x[2 * xs];
    const v8 a = x0 * (-2048.0f / 2975) - x2 * (32.0f / 119), b = x1 * (256.0f / 595);
    const v8 c = x0 * (128.0f / 1071) + x2 * (32.0f / 119), d = x1 * (64.0f / 357);
    y[0] = x0 * (256.0f / 225);
    y[ys] = a - b;
    y[2 * ys] = a + b;
    y[3 * ys] = c + d;
    y[4 * ys] = c - d;
    y[5 * ys] = x2;
  }
};
// A^T x, the output transform (6 -> 4).
struct OutputLine {
  void operator()(const v8* x, int64_t xs, v8* y, int64_t ys) const {
    const v8 x1 = x[xs], x2 = x[2 * xs], x3 = x[3 * xs], x4 = x[4 * xs];
    const v8 a = x1 + x2, b = x1 - x2, c = x3 + x4, d = x3 - x4;
    y[0] = x[0] + a + c;
    y[ys] = 0.625f * b + 1.5f * d;
    y[2 * ys] = 0.390625f * a + 2.25f * c;
    y[3 * ys] = 0.244140625f * b + 3.375f * d + x[5 * xs];
  }
};
// The output-gradient tile's transform in F(3x3, 4x4) (4 -> 6).
struct GradientLine {
  void operator()(const v8* x, int64_t xs, v8* y, int64_t ys) const {
    const v8 x0 = x[0], x1 = x[xs], x2 = x[2 * xs], x3 = x[3 * xs];
    const v8 a = x0 * (-2048.0f / 2975) - x2 * (32.0f / 119);
    const v8 b = x1 * (256.0f / 595) + x3 * (20.0f / 119);
    const v8 c = x0 * (128.0f / 1071) + x2 * (32.0f / 119);
    const v8 d = x1 * (64.0f / 357) + x3 * (48.0f / 119);
    y[0] = x0 * (256.0f / 225);
    y[ys] = a - b;
    y[2 * ys] = a + b;
    y[3 * ys] = c + d;
    y[4 * ys] = c - d;
    y[5 * ys] = x3;
  }
};
// The output transform of F(3x3, 4x4), to the filter gradient (6 -> 3).
struct FilterGradientLine {
  void operator()(const v8* x, int64_t xs, v8* y, int64_t ys) const {
    const v8 x1 = x[xs], x2 = x[2 * xs], x3 = x[3 * xs], x4 = x[4 * xs];
    const v8 a = x1 + x2, c = x3 + x4;
    y[0] = x[0] + a + c;
    y[ys] = 0.625f * (x1 - x2) + 1.5f * (x3 - x4);
    y[2 * ys] = 0.390625f * a + 2.25f * c + x[5 * xs];
  }
};

// out = L in L'^T for an In x In block (in[i * row + j * col]) to Out x Out (out[i * out_row +
// j * out_col]): the line transform along each row, then along each column.
template <int In, int Out, class Line>
inline void transform_2d(const v8* in, int64_t row, int64_t col, v8* out, int64_t out_row,
                         int64_t out_col, Line line) {
  v8 rows[In * Out];
  for (int i = 0; i < In; ++i) line(in + i * row, col, rows + i * Out, 1);
  for (int j = 0; j < Out; ++j) line(rows + j, Out, out + j * out_col, out_row);
}

// Where a group's tiles go: out[P][tiles][channels], tile `first` onwards for this image.
struct TileBlock {
  float* data;
  int64_t tiles;
  int channels;
  int64_t first;
  int64_t point() const { return tiles * channels / kLanes; }  // vectors from one P to the next
  v8* at(int64_t tile, int c0) const {
    return reinterpret_cast<v8*>(data + (first + tile) * channels + c0);
  }
};

// Line's 2-D transform of the In x In window at each 4x4 tile of one image's channels (planes,
// h x w each), the map zero-padded by (In - 4) / 2: with InputLine, B^T d B of each 6x6 patch
// (padding 1); with GradientLine, the F(3x3, 4x4) transform of each 4x4 output-gradient tile.
template <int In, class Line>
void transform_tiles(const float* planes, const ConvGeometry& g, const Tiling& t,
                     const TileBlock& out, float* staged, Line line) {
  constexpr int border = (In - 4) / 2;
  const int cols = 4 * t.cols + 2 * border;
  const int64_t plane = int64_t{g.h} * g.w, point = out.point();
  for (int c0 = 0; c0 < out.channels; c0 += kLanes) {
    stage(planes + c0 * plane, g.h, g.w, t, border, staged);
    const auto* pixels = reinterpret_cast<const v8*>(staged);
    for (int ty = 0; ty < t.rows; ++ty)
      for (int tx = 0; tx < t.cols; ++tx)
        transform_2d<In, 6>(pixels + 4 * (ty * cols + tx), cols, 1, out.at(ty * t.cols + tx, c0),
                            6 * point, point, line);
  }
}

// A^T m A of each tile back to one image's 4x4 blocks (planes, h x w each, cropped).
void transform_outputs(const TileBlock& in, const ConvGeometry& g, const Tiling& t, float* planes,
                       float* staged) {
  const int cols = 4 * t.cols;
  const int64_t plane = int64_t{g.h} * g.w, point = in.point();
  auto* pixels = reinterpret_cast<v8*>(staged);
  for (int c0 = 0; c0 < in.channels; c0 += kLanes) {
    for (int ty = 0; ty < t.rows; ++ty)
      for (int tx = 0; tx < t.cols; ++tx)
        transform_2d<6, 4>(in.at(ty * t.cols + tx, c0), 6 * point, point,
                           pixels + 4 * (ty * cols + tx), cols, 1, OutputLine{});
    unstage(staged, g.h, g.w, t, planes + c0 * plane);
  }
}

// dw[k][c], each filter's 3x3 back out of d[P][k][c].
void filters_from_transformed(const float* d, const ConvGeometry& g, float* dw) {
  const int64_t point = int64_t{g.k} * g.c / kLanes;
  for (int k = 0; k < g.k; ++k)
    for (int c0 = 0; c0 < g.c; c0 += kLanes) {
      v8 taps[9];
      transform_2d<6, 3>(reinterpret_cast<const v8*>(d + int64_t{k} * g.c + c0), 6 * point, point,
                         taps, 3, 1, FilterGradientLine{});
      for (int lane = 0; lane < kLanes; ++lane)
        for (int tap = 0; tap < 9; ++tap)
          dw[(int64_t{k} * g.c + c0 + lane) * 9 + tap] = taps[tap][lane];
    }
}

}  // namespace

// Note: Winograd runs the input gradient of 3x3, stride-1, padding-1 layers with 16 channels or
// more (multiples of 8) on maps of 4x4 and larger, and their filter gradient on maps of 8x8 and
// larger. It takes less than half the time of oneDNN's direct kernels there (bench/bench_conv),
// but its sums are about twice as far from exact as a plain f32 loop's, the direct kernels'
// closer than a plain loop's (F32ConvAccuracy in tests/unit/test_conv.cpp):
// - the forward pass stays direct: it decides every ReLU, and a pre-activation rounded to the
//   other side of zero moves every gradient below it (Winograd forwards made ResNet-18's f32
//   gradients up to 4.6x further from exact on real images; Winograd backwards left them as
//   they were);
// - the filter gradient on maps under 8x8 stays direct: one tile covers the image, Winograd's
//   error (set by the transforms) is 2.4x a plain loop's, whose own grows with the positions
//   summed per weight, fewest on small maps.
bool winograd_suits(ConvPass pass, const ConvGeometry& g) {
  const int smallest_map = pass == ConvPass::backward_filter ? 8 : 4;
  return pass != ConvPass::forward && g.r == 3 && g.s == 3 && g.stride == 1 && g.pad == 1 &&
         g.c >= 16 && g.k >= 16 && g.c % kLanes == 0 && g.k % kLanes == 0 &&
         std::min(g.h, g.w) >= smallest_map;
}

size_t winograd_filters_size(const ConvGeometry& g) {
  return size_t{kPoints} * size_t(g.k) * size_t(g.c);
}

void winograd_data_filters(const ConvGeometry& g, const float* w, float* u, int k0, int k1) {
  const int64_t point = int64_t{g.k} * g.c / kLanes;
  for (int k = k0; k < k1; ++k)
    for (int c0 = 0; c0 < g.c; c0 += kLanes) {
      v8 taps[9];  // flipped: tap (a, b) is w's (2 - a, 2 - b)
      for (int tap = 0; tap < 9; ++tap)
        for (int lane = 0; lane < kLanes; ++lane)
          taps[tap][lane] = w[(int64_t{k} * g.c + c0 + lane) * 9 + 8 - tap];
      transform_2d<3, 6>(taps, 3, 1, reinterpret_cast<v8*>(u + int64_t{k} * g.c + c0), 6 * point,
                         point, FilterLine{});
    }
}

void winograd_backward_data(const ConvGeometry& g, const float* u, const float* dy, float* dx,
                            WinogradScratch& s) {
  const Tiling t = tiling_of(g);
  const int64_t plane = int64_t{g.h} * g.w;
  for (int n0 = 0; n0 < g.n; n0 += t.images_per_group) {
    const int images = std::min(t.images_per_group, g.n - n0);
    const int tiles = images * t.per_image;
    TileBlock v{reserve(s.transformed[0], int64_t{kPoints} * tiles * g.k), tiles, g.k, 0};
    TileBlock m{reserve(s.transformed[1], int64_t{kPoints} * tiles * g.c), tiles, g.c, 0};
    float* staged = reserve(s.staged, int64_t{kLanes} * (4 * t.rows + 2) * (4 * t.cols + 2));
    for (int i = 0; i < images; ++i) {
      v.first = int64_t{i} * t.per_image;
      transform_tiles<6>(dy + int64_t{n0 + i} * g.k * plane, g, t, v, staged, InputLine{});
    }
    for (int p = 0; p < kPoints; ++p)
      gemm(false, false, tiles, g.c, g.k, 1.0f, v.data + p * tiles * g.k, g.k,
           u + int64_t{p} * g.k * g.c, g.c, 0.0f, m.data + p * tiles * g.c, g.c);
    for (int i = 0; i < images; ++i) {
      m.first = int64_t{i} * t.per_image;
      transform_outputs(m, g, t, dx + int64_t{n0 + i} * g.c * plane, staged);
    }
  }
}

void winograd_backward_filter(const ConvGeometry& g, const float* x, const float* dy, float* dw,
                              float* d, WinogradScratch& s) {
  const Tiling t = tiling_of(g);
  const int64_t plane = int64_t{g.h} * g.w;
  for (int n0 = 0; n0 < g.n; n0 += t.images_per_group) {
    const int images = std::min(t.images_per_group, g.n - n0);
    const int tiles = images * t.per_image;
    TileBlock v{reserve(s.transformed[0], int64_t{kPoints} * tiles * g.c), tiles, g.c, 0};
    TileBlock z{reserve(s.transformed[1], int64_t{kPoints} * tiles * g.k), tiles, g.k, 0};
    float* staged = reserve(s.staged, int64_t{kLanes} * (4 * t.rows + 2) * (4 * t.cols + 2));
    for (int i = 0; i < images; ++i) {
      v.first = z.first = int64_t{i} * t.per_image;
      transform_tiles<6>(x + int64_t{n0 + i} * g.c * plane, g, t, v, staged, InputLine{});
      transform_tiles<4>(dy + int64_t{n0 + i} * g.k * plane, g, t, z, staged, GradientLine{});
    }
    for (int p = 0; p < kPoints; ++p)
      gemm(true, false, g.k, g.c, tiles, 1.0f, z.data + p * tiles * g.k, g.k,
           v.data + p * tiles * g.c, g.c, n0 == 0 ? 0.0f : 1.0f, d + int64_t{p} * g.k * g.c, g.c);
  }
  filters_from_transformed(d, g, dw);
}

}  // namespace ringtrain::cpu
