#pragma once
// The operand checks of the Backend ops, shared by every backend so that a wrong operand gives
// the same message on any device: the op, the operand and both shapes.
#include <initializer_list>

#include "ringtrain/backend/device_rule.hpp"
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

// Batch norm's operands: the activation x [N,C,H,W], tensors `like_x` of its shape and dtype,
// f64 per-channel sums of 2C values (+1 for the count when `with_count`), and per-channel
// vectors of C. Returns C.
struct NormSums {
  const char* what;
  const Tensor* sums;
  bool with_count;
};
int64_t check_norm(const char* op, const Tensor& x, std::initializer_list<const Tensor*> like_x,
                   std::initializer_list<NormSums> sums,
                   std::initializer_list<const Tensor*> vectors);

// The classifier y[N,M] = x[N,K] w[M,K]^T + b: its dimensions from 2-D x and w.
struct LinearDims {
  int n, k, m;
};
LinearDims check_linear(const char* op, const Tensor& x, const Tensor& w);

// 2-D logits and one i32 label per row (the label values are each backend's to check).
void check_logits(const char* op, const Tensor& logits, const Tensor& labels);

// The augment op's operands: uint8 NHWC raw images, i32 crops [N,3], the f32 table [C*256] and
// an output of the raw images' shape; a padding >= 0. (A crop outside the padded image reads
// padding only, so the crop values need no check.)
void check_augment(const char* op, const Tensor& raw, const Tensor& crops, const Tensor& table,
                   int pad, const Tensor& out);

// Runs that cover [0, n) in order, each of size > 0: what the update and the per-run sums need.
void check_runs(const char* op, const std::vector<DecayRun>& runs, int64_t n);

// An optimizer update's operands: a known rule whose hyper tensor holds its struct; runs
// covering params; grads of params' length; the rule's count of state tensors, each of params'
// shape and dtype; the rule's values per run in f32 (an empty tensor when it reads none).
void check_update(const char* op, const DeviceRule& rule, const std::vector<DecayRun>& runs,
                  const Tensor& params, const Tensor& grads, const std::vector<Tensor*>& state,
                  const Tensor& run_values);

// sum_squares_per_run's: runs covering x and one f32 output per run.
void check_run_sums(const char* op, const Tensor& x, const std::vector<DecayRun>& runs,
                    const Tensor& out);

}  // namespace ringtrain
