#include "ringtrain/core/layout.hpp"

#include <cstring>

namespace ringtrain {

void convert_layout(const Tensor& src, Tensor& dst) {
  RT_CHECK(src.shape() == dst.shape() && src.dtype() == dst.dtype(),
           "convert_layout: ", src.describe(), " into ", dst.describe());
  if (src.layout() == dst.layout() || src.rank() != 4) {
    std::memcpy(dst.raw(), src.raw(), src.nbytes());
    return;
  }
  const int64_t n = src.dim(0), c = src.dim(1), hw = src.dim(2) * src.dim(3);
  const std::size_t elem = dtype_size(src.dtype());
  const char* in = static_cast<const char*>(src.raw());
  char* out = static_cast<char*>(dst.raw());
  const bool to_nhwc = dst.layout() == Layout::nhwc;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p) {
        const int64_t nchw = (i * c + ch) * hw + p, nhwc = (i * hw + p) * c + ch;
        const int64_t from = to_nhwc ? nchw : nhwc, to = to_nhwc ? nhwc : nchw;
        std::memcpy(out + to * elem, in + from * elem, elem);
      }
}

}  // namespace ringtrain
