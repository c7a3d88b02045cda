#include "ringtrain/parallel/backends.hpp"

#include <algorithm>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/backend/cuda/cuda_backend.hpp"
#include "ringtrain/distributed/device_assignment.hpp"

namespace ringtrain {
namespace {

// The GPU of each replica: this rank's by local rank for one, GPU d (or 0) for DataParallel's.
std::vector<int> gpus_of(const DeviceRequest& r, const World* world) {
  const DeviceInventory devices = probe_devices();
  RT_CHECK(devices.cuda_devices > 0, "--device cuda, but ", devices.why_none);
  if (r.replicas == 1) {
    RT_CHECK(world, "make_backends: a CUDA backend per rank needs the job's world");
    return {assign_device(*world, devices.cuda_devices)};
  }
  std::vector<int> gpus;
  for (int d = 0; d < r.replicas; ++d) gpus.push_back(r.share_device ? 0 : d);
  return gpus;
}

}  // namespace

template <>
const NameTable<DeviceChoice>& names_of<DeviceChoice>() {
  static const NameTable<DeviceChoice> names = {
      {"auto", DeviceChoice::automatic}, {"cpu", DeviceChoice::cpu}, {"cuda", DeviceChoice::cuda}};
  return names;
}

DeviceKind resolve_device(const std::string& device, const DeviceInventory& devices) {
  switch (parse<DeviceChoice>("--device", device)) {
    case DeviceChoice::automatic:
      return devices.cuda_devices > 0 ? DeviceKind::cuda : DeviceKind::cpu;
    case DeviceChoice::cpu:
      return DeviceKind::cpu;
    case DeviceChoice::cuda:
      break;
  }
  RT_CHECK(devices.cuda_devices > 0, "--device cuda, but ", devices.detail);
  return DeviceKind::cuda;
}

std::vector<std::unique_ptr<Backend>> make_backends(const DeviceRequest& r, const World* world) {
  RT_CHECK(r.replicas > 0, "make_backends: --devices must be positive, got ", r.replicas);
  std::vector<std::unique_ptr<Backend>> backends;
  if (r.kind == DeviceKind::cpu) {
    const int threads = r.threads == 0 ? 0 : std::max(1, r.threads / r.replicas);
    for (int d = 0; d < r.replicas; ++d) backends.push_back(std::make_unique<CpuBackend>(threads));
    return backends;
  }
  for (const int gpu : gpus_of(r, world)) {
    CudaOptions o;
    o.device = gpu;
    o.rank = world ? world->rank() : 0;
    o.compute = r.compute;
    o.deterministic = r.deterministic;
    o.conv_algo_cache = r.conv_algo_cache;
    backends.push_back(make_cuda_backend(o));
  }
  return backends;
}

std::unique_ptr<Backend> make_backend(const DeviceRequest& r, const World* world) {
  RT_CHECK(r.replicas == 1, "make_backend: one backend, not ", r.replicas);
  return std::move(make_backends(r, world).front());
}

}  // namespace ringtrain
