#pragma once
#include "ringtrain/core/tensor.hpp"

namespace ringtrain {

// Copies host memory between two tensors of the same logical shape and dtype, transposing a
// 4-D [N,C,H,W] tensor when one is NCHW and the other NHWC; otherwise a plain copy.
void convert_layout(const Tensor& src, Tensor& dst);

}  // namespace ringtrain
