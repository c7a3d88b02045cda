#pragma once
// The launch geometry of the element-wise kernels, shared by the CUDA launcher and the unit
// tests' host emulator, so that both walk the same indices.
#include <cstdint>

#include "ringtrain/backend/kernels/host_device.hpp"

namespace ringtrain::kernels {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65536;

// Blocks for a grid-stride loop over n elements: enough to fill the GPU, no more.
inline unsigned blocks_for(int64_t n, int threads = kThreads) {
  const int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : b));
}

// The first index and the stride of thread `thread` in block `block` of a grid-stride loop.
struct GridStride {
  int64_t first, stride;
};

RT_HOST_DEVICE inline GridStride grid_stride(int64_t block, int64_t thread, int64_t block_dim,
                                             int64_t grid_dim) {
  return {block * block_dim + thread, block_dim * grid_dim};
}

// Two bodies over the same indices as one: a(i), then b(i).
template <class A, class B>
struct Both {
  A a;
  B b;
  RT_HOST_DEVICE void operator()(int64_t i) const {
    a(i);
    b(i);
  }
};

// One step of a launch that finishes with its last block (launch_then_finish in the CUDA
// backend): body over [0, n), walked by that one block.
template <class Body>
struct FinishStep {
  Body body;
  int64_t n;
};

}  // namespace ringtrain::kernels
