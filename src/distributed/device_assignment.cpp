#include "ringtrain/distributed/device_assignment.hpp"

#include <cstdlib>
#include <cstring>

#include "ringtrain/backend/devices.hpp"
#include "ringtrain/core/error.hpp"

namespace ringtrain {
namespace {

std::string visible_devices_env() {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  return v ? str_cat("CUDA_VISIBLE_DEVICES=", v) : "CUDA_VISIBLE_DEVICES unset";
}

}  // namespace

int local_device(int local_rank, int local_size, int visible_devices) {
  RT_CHECK(visible_devices > 0, "devices: no CUDA device visible (", visible_devices_env(), ")");
  if (visible_devices == 1) return 0;
  RT_CHECK(local_size <= visible_devices, "devices: ", local_size, " ranks on this node but only ",
           visible_devices, " visible CUDA devices (", visible_devices_env(),
           "); start at most one rank per GPU");
  return local_rank;
}

void check_distinct_devices(const std::vector<std::string>& bus_ids) {
  for (size_t a = 0; a < bus_ids.size(); ++a)
    for (size_t b = a + 1; b < bus_ids.size(); ++b)
      RT_CHECK(bus_ids[a] != bus_ids[b], "devices: local ranks ", a, " and ", b,
               " would both drive the GPU at PCI ", bus_ids[a],
               "; give each rank its own GPU (CUDA_VISIBLE_DEVICES, srun --gpus-per-task)");
}

int assign_device(const World& world, int visible_devices) {
  const int device = local_device(world.local_rank(), world.local_size(), visible_devices);
  constexpr int kIdBytes = 32;
  char mine[kIdBytes] = {};
  const std::string id = device_bus_id(device);
  std::strncpy(mine, id.c_str(), kIdBytes - 1);
  std::vector<char> all(static_cast<size_t>(kIdBytes) * world.local_size());
  RT_MPI_CHECK(
      MPI_Allgather(mine, kIdBytes, MPI_CHAR, all.data(), kIdBytes, MPI_CHAR, world.local_comm()));
  std::vector<std::string> ids;
  for (int r = 0; r < world.local_size(); ++r) ids.emplace_back(all.data() + r * kIdBytes);
  check_distinct_devices(ids);
  return device;
}

}  // namespace ringtrain
