// The loader's augmentation on the device (--augment-on device): pad, crop, flip, normalise and
// cast a uint8 batch in one kernel, after a copy of half the bytes of a bf16 batch.
#include <initializer_list>

#include "backend_impl.hpp"
#include "ringtrain/backend/crop.hpp"
#include "ringtrain/backend/op_checks.hpp"

namespace ringtrain::cuda {
namespace {

// One thread per output value, in the output's memory order, so the writes coalesce. Source
// pixels come from crop_source, the mapping the host kernel is tested against; every block
// stages the normalisation table (C x 256 floats) in shared memory first.
template <class T>
__global__ void augment_kernel(const uint8_t* raw, const int* crops, const float* table, T* out,
                               int n, int c, int h, int w, int pad, bool nhwc) {
  extern __shared__ float values[];
  for (int i = threadIdx.x; i < c * 256; i += blockDim.x) values[i] = table[i];
  __syncthreads();
  RT_GRID_STRIDE(i, int64_t{n} * c * h * w) {
    int64_t rest = i;
    int channel = 0, y = 0, x = 0;
    if (nhwc) {
      channel = static_cast<int>(rest % c), rest /= c;
      x = static_cast<int>(rest % w), rest /= w;
      y = static_cast<int>(rest % h), rest /= h;
    } else {
      x = static_cast<int>(rest % w), rest /= w;
      y = static_cast<int>(rest % h), rest /= h;
      channel = static_cast<int>(rest % c), rest /= c;
    }
    const int64_t image = rest;
    const int* draw = crops + 3 * image;
    int sy = 0, sx = 0;
    const bool inside = crop_source(Crop{draw[0], draw[1], draw[2] != 0}, pad, h, w, y, x, sy, sx);
    const int v = inside ? raw[((image * h + sy) * w + sx) * c + channel] : 0;
    out[i] = from_float<T>(values[channel * 256 + v]);
  }
}

}  // namespace

void CudaBackend::augment(const Tensor& raw, const Tensor& crops, const Tensor& table, int pad,
                          Tensor& out) {
  check_augment("augment", raw, crops, table, pad, out);
  for (const Tensor* t : std::initializer_list<const Tensor*>{&raw, &crops, &table, &out})
    check_on_device("augment", *t);
  const std::size_t shared = static_cast<std::size_t>(table.numel()) * sizeof(float);
  RT_CHECK(shared <= 48 * 1024, "augment: the table of ", raw.dim(1),
           " channels does not fit 48 KB of shared memory");
  dispatch_float("augment", out, [&](auto tag) {
    using T = decltype(tag);
    augment_kernel<<<blocks_for(out.numel()), kThreads, shared, compute_>>>(
        raw.data<uint8_t>(), crops.data<int32_t>(), table.data<float>(), static_cast<T*>(out.raw()),
        static_cast<int>(raw.dim(0)), static_cast<int>(raw.dim(1)), static_cast<int>(raw.dim(2)),
        static_cast<int>(raw.dim(3)), pad, out.layout() == Layout::nhwc);
    RT_CUDA_CHECK_LAUNCH("augment_kernel");
  });
}

}  // namespace ringtrain::cuda
