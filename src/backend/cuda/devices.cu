#include <cuda_runtime.h>

#include "ringtrain/backend/devices.hpp"
#include "ringtrain/core/error.hpp"

namespace ringtrain {

DeviceInventory probe_devices() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  // No driver or no device is an answer here, not a failure: the CPU backend takes over.
  if (status != cudaSuccess) {
    cudaGetLastError();
    return {0, std::string("cudaGetDeviceCount: ") + cudaGetErrorString(status)};
  }
  return {count, count == 0 ? "no CUDA device visible" : ""};
}

std::string device_bus_id(int device) {
  char id[32] = {};
  const cudaError_t status = cudaDeviceGetPCIBusId(id, sizeof(id), device);
  if (status != cudaSuccess)
    throw Error(str_cat("cudaDeviceGetPCIBusId(", device, ") returned ", status, " (",
                        cudaGetErrorString(status), ")"));
  return id;
}

}  // namespace ringtrain
