#pragma once
// The CPU cores a process may run on: its affinity mask (sched_getaffinity), which mpirun's
// binding, Slurm's --cpus-per-task, taskset and cgroup cpusets all narrow; not the machine's
// core count.
#include <sched.h>

#include <vector>

namespace ringtrain {

// This process's affinity mask (all of the machine's cores when it cannot be read).
cpu_set_t affinity_mask();
// The cores in it, at least 1.
int affinity_cores();

// What one rank may use of its node: its affinity mask shared with the ranks of the node whose
// masks overlap it (all of them when mpirun did not bind, none when each rank has cores of its
// own).
struct CpuShare {
  int affinity_cores = 1;  // in this rank's mask
  int sharing_ranks = 1;   // local ranks whose masks overlap it, itself included
  int cores = 1;           // affinity_cores / sharing_ranks, at least 1
};
CpuShare cpu_share(const std::vector<cpu_set_t>& local_masks, int local_rank);

}  // namespace ringtrain
