// Augmentation on the host: cpu::augment_image, which the loader's threads run for every sample,
// and the CPU backend's augment op, which runs it over a batch already "on the device".
#include "ringtrain/backend/cpu/augment_kernel.hpp"

#include <algorithm>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/backend/op_checks.hpp"
#include "ringtrain/core/half.hpp"

namespace ringtrain::cpu {
namespace {

// One output row of channel c at a time: the source columns of the valid range [lo, hi) are
// one contiguous run (walked backwards when flipped), so the inner loop is a plain lookup.
template <class T, class Convert>
void augment_as(const uint8_t* src, ImageDims d, Crop crop, int pad, const float* table,
                Layout layout, T* out, Convert convert) {
  const int H = d.height, W = d.width, C = d.channels;
  // Output column x reads source column x + dx - pad (before the mirror).
  const int shift = crop.dx - pad;
  const int lo = std::clamp(-shift, 0, W), hi = std::clamp(W - shift, lo, W);
  const int64_t x_stride = layout == Layout::nchw ? 1 : C;
  for (int c = 0; c < C; ++c) {
    const float* values = table + c * 256;
    const T pad_value = convert(values[0]);
    for (int y = 0; y < H; ++y) {
      T* row =
          layout == Layout::nchw ? out + (int64_t{c} * H + y) * W : out + int64_t{y} * W * C + c;
      const int sy = y + crop.dy - pad;
      if (sy < 0 || sy >= H) {
        for (int x = 0; x < W; ++x) row[x * x_stride] = pad_value;
        continue;
      }
      const uint8_t* line = src + int64_t{sy} * W * C + c;
      for (int x = 0; x < lo; ++x) row[(crop.flip ? W - 1 - x : x) * x_stride] = pad_value;
      for (int x = hi; x < W; ++x) row[(crop.flip ? W - 1 - x : x) * x_stride] = pad_value;
      if (crop.flip) {
        for (int x = lo; x < hi; ++x)
          row[(W - 1 - x) * x_stride] = convert(values[line[(x + shift) * C]]);
      } else {
        for (int x = lo; x < hi; ++x) row[x * x_stride] = convert(values[line[(x + shift) * C]]);
      }
    }
  }
}

}  // namespace

void augment_image(const uint8_t* src, ImageDims dims, Crop crop, int pad, const float* table,
                   DType dtype, Layout layout, void* out) {
  switch (dtype) {
    case DType::f32:
      augment_as(src, dims, crop, pad, table, layout, static_cast<float*>(out),
                 [](float v) { return v; });
      return;
    case DType::bf16:
      augment_as(src, dims, crop, pad, table, layout, static_cast<uint16_t*>(out), float_to_bf16);
      return;
    case DType::f16:
      augment_as(src, dims, crop, pad, table, layout, static_cast<uint16_t*>(out), float_to_f16);
      return;
    default:
      throw Error(str_cat("augment_image: images are written as f32, bf16 or f16, not ",
                          dtype_name(dtype)));
  }
}

}  // namespace ringtrain::cpu

namespace ringtrain {

void CpuBackend::augment(const Tensor& raw, const Tensor& crops, const Tensor& table, int pad,
                         Tensor& out) {
  check_augment("augment", raw, crops, table, pad, out);
  const cpu::ImageDims dims{static_cast<int>(raw.dim(2)), static_cast<int>(raw.dim(3)),
                            static_cast<int>(raw.dim(1))};
  const uint8_t* images = raw.data<uint8_t>();
  const int32_t* crop = crops.data<int32_t>();
  const float* values = table.data<float>();
  char* dst = static_cast<char*>(out.raw());
  const int64_t out_bytes = dims.elements() * static_cast<int64_t>(dtype_size(out.dtype()));
  pool_.parallel_for(raw.dim(0), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      cpu::augment_image(images + i * dims.elements(), dims,
                         Crop{crop[3 * i], crop[3 * i + 1], crop[3 * i + 2] != 0}, pad, values,
                         out.dtype(), out.layout(), dst + i * out_bytes);
  });
}

}  // namespace ringtrain
