#include "ringtrain/backend/cuda/capture_pool.hpp"

namespace ringtrain::cuda {

CapturePool::~CapturePool() {
  for (const auto& [block, bytes] : held_) cache_->release(block, bytes);
}

void* CapturePool::allocate(std::size_t bytes) {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::vector<void*>& fitting = free_[BlockCache::round(bytes)];
  if (open_ && !fitting.empty()) {
    void* block = fitting.back();
    fitting.pop_back();
    return block;
  }
  void* block = cache_->allocate(bytes, false);  // a free would break the capture
  held_.emplace_back(block, bytes);
  return block;
}

void CapturePool::release(void* block, std::size_t bytes) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (open_) free_[BlockCache::round(bytes)].push_back(block);
}

void CapturePool::close() {
  const std::lock_guard<std::mutex> lock(mutex_);
  open_ = false;
  free_.clear();
}

}  // namespace ringtrain::cuda
