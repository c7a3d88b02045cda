#pragma once
// f32 convolution through oneDNN's convolution primitives, created once per geometry, pass and
// part of the batch and cached, like cuDNN's algorithm choice: plain NCHW data and OIHW filters
// in and out.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "aligned_buffer.hpp"
#include "ringtrain/backend/geometry.hpp"
#include "ringtrain/core/thread_pool.hpp"

namespace ringtrain::cpu {

// The batch is split into one contiguous part per thread of the pool; each thread runs the
// single-threaded primitive of its part, with its own scratchpad and buffers.
class ConvPrimitives {
 public:
  explicit ConvPrimitives(ThreadPool& pool);
  ~ConvPrimitives();
  ConvPrimitives(const ConvPrimitives&) = delete;
  ConvPrimitives& operator=(const ConvPrimitives&) = delete;

  void forward(const ConvGeometry& g, const float* x, const float* w, float* y);
  void backward_data(const ConvGeometry& g, const float* dy, const float* w, float* dx);
  void backward_filter(const ConvGeometry& g, const float* x, const float* dy, float* dw);  // +=

  struct Entry;
  struct Part;

 private:
  struct Operands {
    const float *a, *b;
    float* out;
    int64_t a_image, b_image, out_image;  // elements per image; 0: not split by image
  };
  void run(const char* call, ConvPass pass, const ConvGeometry& g, const Operands& o);
  void run_winograd(ConvPass pass, const ConvGeometry& g, const Operands& o);
  // How many parts g's batch is split into: one a thread, at least one image each.
  int64_t parts_of(const ConvGeometry& g) const;
  // Calls body(part, its index, its geometry, its first image) for each part of the batch, in
  // parallel.
  void for_each_part(
      const ConvGeometry& g,
      const std::function<void(Part&, int64_t index, const ConvGeometry&, int n0)>& body);
  // The parts' filter gradients for g, added to out in part order.
  void add_part_gradients(const ConvGeometry& g, float* out);

  ThreadPool& pool_;
  std::vector<std::unique_ptr<Part>> parts_;  // one per thread
  // Note: our Winograd's filters in the transformed domain, 4x the filters' size: the input
  // gradient's (one set, shared by the parts) or each part's filter-gradient sum (one set a
  // part). One buffer serves both because a call needs only one kind: on ResNet-18 the largest
  // of the first (512 channels, 38 MiB) would otherwise sit beside two of the second (256, 9 MiB).
  AlignedBuffer winograd_filters_;
  std::mutex mutex_;  // one convolution at a time uses the parts
};

}  // namespace ringtrain::cpu
