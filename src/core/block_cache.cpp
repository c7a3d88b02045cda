#include "ringtrain/core/block_cache.hpp"

#include "ringtrain/core/error.hpp"

namespace ringtrain {

BlockCache::BlockCache(RawAlloc raw_alloc, RawFree raw_free)
    : raw_alloc_(std::move(raw_alloc)), raw_free_(std::move(raw_free)) {}

BlockCache::~BlockCache() {
  empty();
}

std::size_t BlockCache::round(std::size_t bytes) {
  constexpr std::size_t kSmall = 512, kLarge = std::size_t{2} << 20;
  const std::size_t unit = bytes < (std::size_t{1} << 20) ? kSmall : kLarge;
  return bytes == 0 ? kSmall : (bytes + unit - 1) / unit * unit;
}

void* BlockCache::allocate(std::size_t bytes, bool may_release) {
  const std::size_t size = round(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  auto bin = free_.find(size);
  if (bin != free_.end() && !bin->second.empty()) {
    void* block = bin->second.back();
    bin->second.pop_back();
    cached_ -= size;
    in_use_ += size;
    return block;
  }
  void* block = raw_alloc_(size);
  RT_CHECK(block || may_release, "device memory: cannot allocate ", size, " bytes (", in_use_,
           " bytes in use, ", cached_,
           " cached) inside a captured step, where no cached block may "
           "be freed; lower --batch-size or run without --cuda-graph");
  if (!block) {
    // Note: the cached blocks have the wrong sizes for this request but hold memory the driver
    // could give it: all of them go back before the one retry.
    const std::size_t cached = cached_;
    empty_locked();
    block = raw_alloc_(size);
    RT_CHECK(block, "device memory: cannot allocate ", size, " bytes (", in_use_, " bytes in use, ",
             cached, " cached and released before the retry)");
  }
  ++raw_allocations_;
  in_use_ += size;
  return block;
}

// Note: a released block goes back into its bin at once, although kernels already queued may
// still use it: the CUDA backend queues its work on one compute stream, so the block's next
// user is queued behind them (the bet PyTorch's caching allocator makes per stream). Bins hold
// exact rounded sizes, with no splitting: a training step repeats its sizes, so the bins fill
// in the first step and match from then on.
void BlockCache::release(void* block, std::size_t bytes) {
  const std::size_t size = round(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  free_[size].push_back(block);
  in_use_ -= size;
  cached_ += size;
}

void BlockCache::empty() {
  std::lock_guard<std::mutex> lock(mutex_);
  empty_locked();
}

void BlockCache::empty_locked() {
  for (auto& [size, blocks] : free_)
    for (void* block : blocks) raw_free_(block);
  free_.clear();
  cached_ = 0;
}

}  // namespace ringtrain
