#pragma once
// A heap buffer aligned for vector loads, grown (never shrunk) to the largest size asked for: the
// scratch of the CPU convolutions, kept from call to call.
#include <cstddef>
#include <cstdlib>
#include <memory>

namespace ringtrain::cpu {

class AlignedBuffer {
 public:
  // The buffer, at least bytes long; what it held is lost when it grows.
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

}  // namespace ringtrain::cpu
