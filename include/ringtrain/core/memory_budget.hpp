#pragma once
// How much memory a command may take, and a budget of bytes that threads share: what lets a
// command refuse work that cannot fit before allocating it, and bound what its threads hold at
// once.
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>

namespace ringtrain {

// The bytes this process may still allocate, and where that bound comes from.
struct MemoryLimit {
  int64_t bytes = 0;
  // "this machine's 25.2 GB of memory", or "the 1.8 GB this process may still map under its
  // address-space limit (ulimit -v)": for messages.
  std::string source;
};

// The machine's physical memory, or less under a memory cgroup's limit (a Slurm job's --mem, a
// container's) or an address-space limit (RLIMIT_AS, ulimit -v: that limit less what the process
// already maps), whichever is least.
MemoryLimit memory_limit();

// The least memory limit of the cgroups of this process (its group and the groups above it), or
// -1 when none sets one. `proc_cgroup` is the text of /proc/self/cgroup, `root` where the
// hierarchies are mounted (/sys/fs/cgroup: cgroup v2's memory.max there, v1's
// memory.limit_in_bytes under root/memory).
int64_t cgroup_memory_limit(const std::string& proc_cgroup, const std::string& root);

// Throws an Error "WHAT need X GB, more than SOURCE: REMEDY" when `bytes` exceed memory_limit().
void check_fits_memory(int64_t bytes, const std::string& what, const std::string& remedy);

// Bytes that threads take and give back: take() waits until the bytes fit beside what the others
// hold. A request larger than the whole budget waits until nothing else is held, then is granted
// alone, so every request is granted in the end (each thread holds one lease at a time).
class MemoryBudget {
 public:
  explicit MemoryBudget(int64_t bytes) : capacity_(bytes) {}

  // Bytes taken from a budget, given back when the lease is destroyed or replaced.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept { *this = std::move(other); }
    Lease& operator=(Lease&& other) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { release(); }

   private:
    friend class MemoryBudget;
    void release();
    MemoryBudget* budget_ = nullptr;
    int64_t bytes_ = 0;
  };

  Lease take(int64_t bytes);

 private:
  std::mutex mutex_;
  std::condition_variable freed_;
  const int64_t capacity_;
  int64_t held_ = 0;
};

}  // namespace ringtrain
