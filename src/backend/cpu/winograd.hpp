#pragma once
// Winograd F(4x4, 3x3) for the two backward passes of 3x3, stride-1, padding-1 convolutions on
// plain NCHW tensors, single-threaded (one part of the batch per call, as conv_primitives runs
// them): our transforms, and per group of tiles 36 GEMMs through oneDNN's sgemm.
//
// Each 4x4 block of outputs (a tile) reads a 6x6 patch of the input; in the transformed domain
// the 3x3 convolution becomes one product per point of the 6x6, so a tile costs 36 products
// against the direct 144 (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks",
// 2015). With T tiles, P the 36 points, channels in K and out C:
//   input gradient:  M[P][T][C] = V[P][T][K] . U[P][K][C]    (V: transformed output gradient
//                    tiles, U: transformed flipped filters), then each tile's 4x4 back out;
//   filter gradient: D[P][K][C] += Z[P][T][K]^T . V[P][T][C] (Z: transformed output-gradient
//                    tiles, V: transformed input patches), then each filter's 3x3 back out.
// Channels go eight to a vector through the transforms, so both channel counts must be
// multiples of 8. The same code runs on every CPU; only oneDNN's sgemm picks its kernels.
#include <cstddef>

#include "aligned_buffer.hpp"
#include "ringtrain/backend/geometry.hpp"

namespace ringtrain::cpu {

// Whether pass on g runs Winograd (the Note in winograd.cpp says which and why).
bool winograd_suits(ConvPass pass, const ConvGeometry& g);

// One thread's buffers, grown to the largest call and kept.
struct WinogradScratch {
  AlignedBuffer staged;          // one image's eight channels, one vector a pixel
  AlignedBuffer transformed[2];  // a group of tiles, in the transformed domain
};

// Floats of one set of g's filters in the transformed domain: the input gradient's u, or the
// filter gradient's sum d.
size_t winograd_filters_size(const ConvGeometry& g);

// u[P][k][c] for the filters k in [k0, k1): w[k][c] flipped (the input gradient is the
// transposed convolution) and transformed. Threads may fill disjoint ranges of k at once.
void winograd_data_filters(const ConvGeometry& g, const float* w, float* u, int k0, int k1);

// dx (g.n images) = the input gradient of dy, from the filters winograd_data_filters made.
void winograd_backward_data(const ConvGeometry& g, const float* u, const float* dy, float* dx,
                            WinogradScratch& s);

// dw = the filter gradient of g.n images (overwritten, not added to); d holds
// winograd_filters_size(g) floats of scratch.
void winograd_backward_filter(const ConvGeometry& g, const float* x, const float* dy, float* dw,
                              float* d, WinogradScratch& s);

}  // namespace ringtrain::cpu
