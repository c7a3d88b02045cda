#pragma once
// The operand checks of the Backend ops, shared by every backend so that a wrong operand gives
// the same message on any device: the op, the operand and both shapes.
#include <initializer_list>

#include "ringtrain/backend/geometry.hpp"
#include "ringtrain/core/tensor.hpp"

namespace ringtrain {

// Every operand in `dtype` (backends that read raw device memory check this first).
void check_dtype(const char* op, std::initializer_list<const Tensor*> operands, DType dtype);

// The x-, w- and y-shaped operands of one convolution pass (gradients in the backward passes).
void check_conv(ConvPass pass, const ConvGeometry& g, const Tensor& x, const Tensor& w,
                const Tensor& y);
const char* conv_pass_name(ConvPass pass);

// Max pooling's input and output (or their gradients).
void check_pool(const char* op, const PoolGeometry& g, const Tensor& x, const Tensor& y);

// Batch norm's activation [N,C,H,W]: returns C.
int64_t check_norm_input(const char* op, const Tensor& x);
void check_channels(const char* op, std::initializer_list<const Tensor*> vectors, int64_t c);

// The classifier y[N,M] = x[N,K] w[M,K]^T + b: its dimensions from 2-D x and w.
struct LinearDims {
  int n, k, m;
};
LinearDims check_linear(const char* op, const Tensor& x, const Tensor& w);

// 2-D logits and one i32 label per row (the label values are each backend's to check).
void check_logits(const char* op, const Tensor& logits, const Tensor& labels);

}  // namespace ringtrain
