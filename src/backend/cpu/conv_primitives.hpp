#pragma once
// f32 convolution through oneDNN's convolution primitives, created once per geometry, pass and
// part of the batch and cached, like cuDNN's algorithm choice: plain NCHW data and OIHW filters
// in and out.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "ringtrain/backend/geometry.hpp"
#include "ringtrain/core/thread_pool.hpp"

namespace ringtrain::cpu {

// A heap buffer aligned for vector loads, grown (never shrunk) to the largest size asked for.
class AlignedBuffer {
 public:
  void* reserve(size_t bytes);
  void* data() const { return data_.get(); }

 private:
  static constexpr size_t kAlignment = 4096;
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> data_;
  size_t bytes_ = 0;
};

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

  ThreadPool& pool_;
  std::vector<std::unique_ptr<Part>> parts_;  // one per thread
  std::mutex mutex_;                          // one convolution at a time uses the parts
};

}  // namespace ringtrain::cpu
