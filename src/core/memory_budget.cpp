#include "ringtrain/core/memory_budget.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <utility>

#include "ringtrain/core/error.hpp"

namespace ringtrain {
namespace {

std::string gigabytes(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GB", static_cast<double>(bytes) / 1e9);
  return text;
}

// The bytes of address space this process maps now (VmSize), from /proc/self/statm; 0 where it
// cannot be read.
int64_t mapped_bytes() {
  std::ifstream in("/proc/self/statm");
  int64_t pages = 0;
  in >> pages;
  return in ? pages * sysconf(_SC_PAGESIZE) : 0;
}

}  // namespace

MemoryLimit memory_limit() {
  const int64_t physical = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  MemoryLimit limit{physical, str_cat("this machine's ", gigabytes(physical), " of memory")};
  struct rlimit as {};
  if (getrlimit(RLIMIT_AS, &as) != 0 || as.rlim_cur == RLIM_INFINITY) return limit;
  const int64_t left = static_cast<int64_t>(as.rlim_cur) - mapped_bytes();
  if (left >= limit.bytes) return limit;
  limit.bytes = std::max<int64_t>(0, left);
  limit.source = str_cat("the ", gigabytes(limit.bytes),
                         " this process may still map under its address-space limit (ulimit -v)");
  return limit;
}

void check_fits_memory(int64_t bytes, const std::string& what, const std::string& remedy) {
  const MemoryLimit limit = memory_limit();
  RT_CHECK(limit.bytes <= 0 || bytes <= limit.bytes, what, " need ", gigabytes(bytes),
           ", more than ", limit.source, ": ", remedy);
}

MemoryBudget::Lease& MemoryBudget::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    release();
    budget_ = std::exchange(other.budget_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void MemoryBudget::Lease::release() {
  if (!budget_) return;
  {
    std::lock_guard<std::mutex> lock(budget_->mutex_);
    budget_->held_ -= bytes_;
  }
  budget_->freed_.notify_all();
  budget_ = nullptr;
  bytes_ = 0;
}

MemoryBudget::Lease MemoryBudget::take(int64_t bytes) {
  std::unique_lock<std::mutex> lock(mutex_);
  freed_.wait(lock, [&] { return held_ == 0 || held_ + bytes <= capacity_; });
  held_ += bytes;
  Lease lease;
  lease.budget_ = this;
  lease.bytes_ = bytes;
  return lease;
}

}  // namespace ringtrain
