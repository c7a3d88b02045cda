#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ringtrain/backend/backend.hpp"
#include "ringtrain/backend/devices.hpp"
#include "ringtrain/distributed/world.hpp"

namespace ringtrain {

// The backends one process computes on, as every command asks for them: train (one per rank,
// or DataParallel's replicas), eval, predict and the probes. make_backends is the one place a
// backend is made for a device.
struct DeviceRequest {
  DeviceKind kind = DeviceKind::cpu;
  int replicas = 1;             // DataParallel's devices; 1 for one device per process
  bool share_device = false;    // every CUDA replica on GPU 0 (--dp-share-device, a test aid)
  int threads = 1;              // CPU compute threads of the process, shared by the replicas;
                                // 0: every core, for each
  DType compute = DType::f32;   // CUDA's compute dtype (from --amp)
  bool deterministic = false;   // CUDA: deterministic cuDNN algorithms
  std::string conv_algo_cache;  // CUDA: the file of cuDNN's searches; "": none kept
};

// --device: auto (CUDA where this process sees a GPU), cpu or cuda.
enum class DeviceChoice { automatic, cpu, cuda };
template <>
const NameTable<DeviceChoice>& names_of<DeviceChoice>();

// The device --device names. Throws a ConfigError naming the accepted values for another
// text, and an Error saying why for cuda without a GPU.
DeviceKind resolve_device(const std::string& device, const DeviceInventory& devices);

// One backend per replica. A single CUDA backend drives this rank's GPU, chosen by its local
// rank in `world` (assign_device; `world` must then be given); replica d of several drives GPU d
// (GPU 0 with share_device). A CPU request shares `threads` among its replicas.
std::vector<std::unique_ptr<Backend>> make_backends(const DeviceRequest& request,
                                                    const World* world);
// The one backend of a request of one replica.
std::unique_ptr<Backend> make_backend(const DeviceRequest& request, const World* world);

}  // namespace ringtrain
