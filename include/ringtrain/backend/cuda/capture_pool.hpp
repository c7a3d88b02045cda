#pragma once
#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ringtrain/core/block_cache.hpp"

namespace ringtrain::cuda {

// The device memory of one captured step (a CUDA graph), taken from the backend's cache.
// Note: a replay writes the same addresses the capture saw, so none of them may be handed to a
// tensor allocated afterwards: the pool holds every block it gave out until it is destroyed
// (the graph dropped), whether or not its tensor is still alive. During the capture a block
// freed is handed out again for the same size, in stream order, as the eager step reuses
// memory, so that the capture needs no more memory than the step before it.
class CapturePool {
 public:
  explicit CapturePool(std::shared_ptr<BlockCache> cache) : cache_(std::move(cache)) {}
  ~CapturePool();
  CapturePool(const CapturePool&) = delete;
  CapturePool& operator=(const CapturePool&) = delete;

  // A block of at least `bytes`: one freed earlier in the capture when one fits, else the
  // cache's.
  void* allocate(std::size_t bytes);
  // A block given out by allocate is free: handed out again while the capture is open.
  void release(void* block, std::size_t bytes);
  // The capture has ended: what is freed from now on is not handed out again.
  void close();
  std::size_t blocks() const { return held_.size(); }

 private:
  std::shared_ptr<BlockCache> cache_;
  std::mutex mutex_;
  std::unordered_map<std::size_t, std::vector<void*>> free_;  // by BlockCache::round
  std::vector<std::pair<void*, std::size_t>> held_;           // every block given out
  bool open_ = true;
};

}  // namespace ringtrain::cuda
