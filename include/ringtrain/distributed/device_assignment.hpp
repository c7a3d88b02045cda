#pragma once
#include <string>
#include <vector>

#include "ringtrain/distributed/world.hpp"

namespace ringtrain {

// The visible CUDA device a rank drives: its local rank, or device 0 when every rank sees
// exactly one device (srun --gpus-per-task, or CUDA_VISIBLE_DEVICES set per rank). Throws when
// the node has more ranks than visible devices.
int local_device(int local_rank, int local_size, int visible_devices);

// bus_ids[r] is the PCI bus id of local rank r's device. Throws naming the first two local ranks
// that would drive the same GPU (NCCL would only say "duplicate GPU").
void check_distinct_devices(const std::vector<std::string>& bus_ids);

// local_device, then check_distinct_devices over the bus ids gathered from the node's ranks.
int assign_device(const World& world, int visible_devices);

}  // namespace ringtrain
