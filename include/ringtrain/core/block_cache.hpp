#pragma once
#include <cstddef>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace ringtrain {

// A caching allocator over a slow raw allocator (cudaMalloc): freed blocks are kept in bins by
// rounded size and handed out again, so a training step that frees and allocates the same
// sizes every time reaches the raw allocator only in its first step.
class BlockCache {
 public:
  using RawAlloc = std::function<void*(std::size_t)>;  // nullptr when out of memory
  using RawFree = std::function<void(void*)>;

  BlockCache(RawAlloc raw_alloc, RawFree raw_free);
  ~BlockCache();
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // Blocks below 1 MiB round up to 512 bytes, larger ones to 2 MiB, so that sizes that differ
  // a little (the last batch of an epoch) share bins.
  static std::size_t round(std::size_t bytes);

  // A block of at least `bytes`; with everything cached given back and one retry when the raw
  // allocator fails (unless `may_release` is false: a stream capture, which a free would
  // break, is open), then an Error with the sizes involved.
  void* allocate(std::size_t bytes, bool may_release = true);
  void release(void* block, std::size_t bytes);
  // Gives every cached (free) block back to the raw allocator.
  void empty();

  std::size_t raw_allocations() const { return raw_allocations_; }
  std::size_t bytes_in_use() const { return in_use_; }
  std::size_t bytes_cached() const { return cached_; }

 private:
  void empty_locked();

  RawAlloc raw_alloc_;
  RawFree raw_free_;
  std::mutex mutex_;
  std::unordered_map<std::size_t, std::vector<void*>> free_;
  std::size_t raw_allocations_ = 0, in_use_ = 0, cached_ = 0;
};

}  // namespace ringtrain
