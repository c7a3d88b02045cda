#pragma once
#include <string>
#include <vector>

#include "ringtrain/core/library_version.hpp"

namespace ringtrain {

// What accelerators this process can use. Built without the CUDA backend, or on a machine
// without a driver or a GPU, there are none.
struct DeviceInventory {
  int cuda_devices = 0;
  std::string why_none;  // why cuda_devices is 0, in a user's words: "no usable GPU (...)"
  std::string detail;    // and as CUDA said it, for an explicit --device cuda
};
DeviceInventory probe_devices();

// The PCI bus id of a visible CUDA device ("0000:3B:00.0"): what tells two devices apart
// across processes whatever their CUDA_VISIBLE_DEVICES.
std::string device_bus_id(int device);

// Lets `device` and `peer` read each other's memory where cudaDeviceCanAccessPeer says they can
// (enabling it twice is fine). Returns the path copies between them take: "peer-to-peer" or
// "through host memory".
std::string enable_peer_access(int device, int peer);

// The CUDA runtime and driver, cuDNN and cuBLAS this build uses (one line saying they are not
// built in without the CUDA backend).
std::vector<LibraryVersion> cuda_library_versions();

}  // namespace ringtrain
