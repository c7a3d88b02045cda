#include "ringtrain/core/cpus.hpp"

#include <algorithm>
#include <thread>

namespace ringtrain {

cpu_set_t affinity_mask() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) == 0 && CPU_COUNT(&mask) > 0) return mask;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned c = 0; c < cores && c < CPU_SETSIZE; ++c) CPU_SET(c, &mask);
  return mask;
}

int affinity_cores() {
  const cpu_set_t mask = affinity_mask();
  return std::max(1, CPU_COUNT(&mask));
}

CpuShare cpu_share(const std::vector<cpu_set_t>& local_masks, int local_rank) {
  const cpu_set_t& mine = local_masks.at(static_cast<size_t>(local_rank));
  CpuShare share;
  share.affinity_cores = std::max(1, CPU_COUNT(&mine));
  share.sharing_ranks = 0;
  for (const cpu_set_t& other : local_masks) {
    cpu_set_t both;
    CPU_AND(&both, &mine, &other);
    if (CPU_COUNT(&both) > 0) ++share.sharing_ranks;
  }
  share.sharing_ranks = std::max(1, share.sharing_ranks);
  share.cores = std::max(1, share.affinity_cores / share.sharing_ranks);
  return share;
}

}  // namespace ringtrain
