#include "ringtrain/core/memory_budget.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
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

// The first number of the file `path`; -1 when it cannot be read or holds none ("max").
int64_t file_number(const std::string& path) {
  std::ifstream in(path);
  int64_t value = -1;
  in >> value;
  return in ? value : -1;
}

// Note: cgroup v1 writes "no limit" as a page-aligned number near 2^63, v2 as "max".
constexpr int64_t kNoLimit = int64_t{1} << 62;

// The limit the group at `dir` sets, or -1 when it sets none.
// Note: the limit, not the limit less the group's usage: the usage counts the page cache, which
// the kernel reclaims before it refuses memory, as physical memory is taken whole above.
int64_t group_limit(const std::string& dir, bool v2) {
  const int64_t limit = file_number(dir + (v2 ? "/memory.max" : "/memory.limit_in_bytes"));
  return limit >= 0 && limit < kNoLimit ? limit : -1;
}

// The least limit of the group `path` ("/a/b") and the groups above it, under `mount`.
int64_t least_limit(const std::string& mount, std::string path, bool v2) {
  int64_t least = -1;
  while (true) {
    const int64_t limit = group_limit(mount + (path == "/" ? "" : path), v2);
    if (limit >= 0 && (least < 0 || limit < least)) least = limit;
    if (path.empty() || path == "/") return least;
    path = path.substr(0, path.rfind('/'));
    if (path.empty()) path = "/";
  }
}

}  // namespace

int64_t cgroup_memory_limit(const std::string& proc_cgroup, const std::string& root) {
  std::istringstream lines(proc_cgroup);
  std::string line;
  int64_t least = -1;
  while (std::getline(lines, line)) {
    const size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    const bool v2 = line.compare(0, first, "0") == 0 && controllers.empty();
    const bool v1 = (',' + controllers + ',').find(",memory,") != std::string::npos;
    if (!v1 && !v2) continue;
    const int64_t limit = least_limit(v2 ? root : root + "/memory", path, v2);
    if (limit >= 0 && (least < 0 || limit < least)) least = limit;
  }
  return least;
}

MemoryLimit memory_limit() {
  const int64_t physical = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  MemoryLimit limit{physical, str_cat("this machine's ", gigabytes(physical), " of memory")};
  std::ifstream proc("/proc/self/cgroup");
  const std::string groups((std::istreambuf_iterator<char>(proc)),
                           std::istreambuf_iterator<char>());
  const int64_t group = cgroup_memory_limit(groups, "/sys/fs/cgroup");
  if (group >= 0 && group < limit.bytes)
    limit = {group, str_cat("this job's memory cgroup limit of ", gigabytes(group),
                            " (Slurm's --mem, or a container's limit)")};
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
