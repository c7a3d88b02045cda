#pragma once
// Kernel bodies of batch norm in NHWC: x is a [rows, C] matrix with rows = N*H*W, per-channel
// values are f32 whatever the element type T, sums are f64 as on the CPU. The per-channel sums
// take two ordered passes (ChunkSums, then ColumnSums over the chunks' partial sums), so that
// they are the same bits on every run whatever the launch geometry.
// Note: the CUDA backend runs a training pass as two launches each way (launch_then_finish):
// forward, ChunkSums whose last block finishes with SumsWithCount and TrainStats, then
// ChannelAffine; backward, ChunkSums of GradientSums whose last block finishes with ColumnSums
// and ChannelGradients, then InputGrad. SyncBatchNorm runs the same bodies with its all-reduce
// between the sums and the rest.
#include <cmath>
#include <cstdint>

#include "ringtrain/backend/kernels/element.hpp"
#include "ringtrain/backend/kernels/reduce.hpp"

namespace ringtrain::kernels {

// The two values one element adds to its channel's two sums.
struct SumPair {
  double first, second;
};

// (x, x^2): the forward sums.
template <class T>
struct SumAndSquare {
  const T* x;
  RT_HOST_DEVICE SumPair operator()(int64_t i, int) const {
    const double v = to_float(x[i]);
    return {v, v * v};
  }
};

// (g, g * xhat): the backward sums, with g the output gradient masked by the fused ReLU, whose
// mask is recomputed from x with the forward's affine map.
template <class T>
struct GradientSums {
  const T *x, *dy;
  const float *gamma, *beta, *mean, *invstd;
  bool relu;
  RT_HOST_DEVICE float xhat(int64_t i, int c) const {
    return (to_float(x[i]) - mean[c]) * invstd[c];
  }
  RT_HOST_DEVICE float gradient(int64_t i, int c) const {
    const float scale = gamma[c] * invstd[c], shift = beta[c] - mean[c] * scale;
    return (!relu || to_float(x[i]) * scale + shift > 0.f) ? to_float(dy[i]) : 0.f;
  }
  RT_HOST_DEVICE SumPair operator()(int64_t i, int c) const {
    const float g = gradient(i, c);
    return {g, g * xhat(i, c)};
  }
};

// The rows of one chunk of the first pass, and the number of chunks.
struct ChannelChunks {
  int64_t rows_per_chunk, chunks;
};

// Note: the first pass runs chunks * C threads, each adding rows_per_chunk values one after
// the other (one memory round trip per few rows), the second 2C threads, each adding `chunks`
// partials one after the other; both chains are latency-bound, so rows_per_chunk grows as the
// square root of rows (the smallest power of two >= 32 with 4 * R^2 >= rows), keeping the two
// chains in proportion (the first pass reads DRAM, slower than the L2 the partials sit in).
// At ResNet-50's CIFAR shapes with 256 images a GPU, C grows as rows shrink, so chunks * C stays
// within 65k-262k threads (32x32x64: R = 256, 1024 chunks; 4x4x2048: R = 32, 128 chunks) and a
// column's second chain is at most 1024 long. The chunks depend on rows alone, never on the
// device, so the sums are the same bits on every GPU.
inline ChannelChunks channel_chunks(int64_t rows) {
  int64_t per_chunk = 32;
  while (4 * per_chunk * per_chunk < rows) per_chunk *= 2;
  return {per_chunk, (rows + per_chunk - 1) / per_chunk};
}

// First pass, over chunks * C indices j = k * C + c (consecutive threads read consecutive
// channels of a row): chunk k of channel c adds pair over its rows in order into
// partials[k * 2C + c] and partials[k * 2C + C + c].
template <class Pair>
struct ChunkSums {
  Pair pair;
  int64_t rows, rows_per_chunk;
  int channels;
  double* partials;
  RT_HOST_DEVICE void operator()(int64_t j) const {
    const int64_t k = j / channels, begin = k * rows_per_chunk;
    const int c = static_cast<int>(j % channels);
    const int64_t end = begin + rows_per_chunk < rows ? begin + rows_per_chunk : rows;
    double first = 0, second = 0;
    for (int64_t r = begin; r < end; ++r) {
      const SumPair p = pair(r * channels + c, c);
      first += p.first;
      second += p.second;
    }
    partials[k * 2 * channels + c] = first;
    partials[k * 2 * channels + channels + c] = second;
  }
};

// Over 2C + 1: the forward sums [sum x (C), sum x^2 (C), count] from the first pass's partials.
struct SumsWithCount {
  ColumnSums<double, double> columns;  // over the first 2C
  double count;
  RT_HOST_DEVICE void operator()(int64_t j) const {
    if (j < columns.width) {
      columns(j);
    } else {
      columns.sums[columns.width] = count;
    }
  }
};

// Over C: the batch statistics from the forward sums [sum x, sum x^2, count], PyTorch's
// running-statistics update (unbiased variance), and the affine map y = x * scale + shift.
struct TrainStats {
  const double* sums;
  int channels;
  float momentum, eps;
  const float *gamma, *beta;
  float *save_mean, *save_invstd, *running_mean, *running_var, *scale, *shift;
  RT_HOST_DEVICE void operator()(int64_t i) const {
    const int c = static_cast<int>(i);
    const double count = sums[2 * channels];
    const double mean = sums[c] / count;
    const double var = fmax(sums[channels + c] / count - mean * mean, 0.0);
    const float invstd = static_cast<float>(1.0 / sqrt(var + eps));
    save_mean[c] = static_cast<float>(mean);
    save_invstd[c] = invstd;
    const double unbiased = count > 1 ? var * count / (count - 1) : var;
    running_mean[c] = static_cast<float>((1 - momentum) * running_mean[c] + momentum * mean);
    running_var[c] = static_cast<float>((1 - momentum) * running_var[c] + momentum * unbiased);
    scale[c] = gamma[c] * invstd;
    shift[c] = beta[c] - save_mean[c] * scale[c];
  }
};

// Over C: the affine map of evaluation, from the running statistics.
struct EvalStats {
  float eps;
  const float *gamma, *beta, *running_mean, *running_var;
  float *scale, *shift;
  RT_HOST_DEVICE void operator()(int64_t c) const {
    const float invstd = static_cast<float>(1.0 / sqrt(double(running_var[c]) + eps));
    scale[c] = gamma[c] * invstd;
    shift[c] = beta[c] - running_mean[c] * scale[c];
  }
};

// Over rows * C: y = x * scale + shift per channel, then the fused ReLU when asked.
template <class T>
struct ChannelAffine {
  const T* x;
  T* y;
  int channels;
  const float *scale, *shift;
  bool relu;
  RT_HOST_DEVICE void operator()(int64_t i) const {
    const int c = static_cast<int>(i % channels);
    const float v = to_float(x[i]) * scale[c] + shift[c];
    y[i] = from_float<T>(relu ? fmaxf(v, 0.f) : v);
  }
};

// Over rows * C: the end of a residual block, y = relu(x * scale + shift + s), with s the
// shortcut r mapped by its batch norm's affine (r_affine) or, without one, r itself.
template <class T>
struct NormAddRelu {
  const T *x, *r;
  T* y;
  int channels;
  const float *affine, *r_affine;
  RT_HOST_DEVICE void operator()(int64_t i) const {
    const int c = static_cast<int>(i % channels);
    const float v = to_float(x[i]) * affine[c] + affine[channels + c];
    const float s =
        r_affine ? to_float(r[i]) * r_affine[c] + r_affine[channels + c] : to_float(r[i]);
    y[i] = from_float<T>(fmaxf(v + s, 0.f));
  }
};

// Over C: dbeta += sum g and dgamma += sum g * xhat from this rank's backward sums, into the
// f32 gradients; and what dx needs per channel from the (possibly all-reduced) global sums over
// `count` values, into table = [scale (C), shift (C), mean g (C), mean g * xhat (C)], where
// x * scale + shift is the forward's affine map (for the ReLU's mask).
struct ChannelGradients {
  const double *local, *global;
  double count;
  int channels;
  const float *gamma, *beta, *mean, *invstd;
  float *dgamma, *dbeta, *table;
  RT_HOST_DEVICE void operator()(int64_t i) const {
    const int c = static_cast<int>(i);
    dbeta[c] += static_cast<float>(local[c]);
    dgamma[c] += static_cast<float>(local[channels + c]);
    const float scale = gamma[c] * invstd[c];
    table[c] = scale;
    table[channels + c] = beta[c] - mean[c] * scale;
    table[2 * channels + c] = static_cast<float>(global[c] / count);
    table[3 * channels + c] = static_cast<float>(global[channels + c] / count);
  }
};

// Over rows * C: dx = gamma * invstd * (g - mean(g) - xhat * mean(g * xhat)), with g the output
// gradient masked by the fused ReLU and the per-channel values from ChannelGradients' table.
template <class T>
struct InputGrad {
  const T *x, *dy;
  const float *mean, *invstd, *table;
  bool relu;
  int channels;
  T* dx;
  RT_HOST_DEVICE void operator()(int64_t i) const {
    const int c = static_cast<int>(i % channels);
    const float scale = table[c], shift = table[channels + c];
    const float v = to_float(x[i]);
    const float g = (!relu || v * scale + shift > 0.f) ? to_float(dy[i]) : 0.f;
    const float xhat = (v - mean[c]) * invstd[c];
    dx[i] = from_float<T>(scale * (g - table[2 * channels + c] - xhat * table[3 * channels + c]));
  }
};

}  // namespace ringtrain::kernels
