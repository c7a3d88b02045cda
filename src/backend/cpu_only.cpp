// What the CUDA backend provides, for a ringtrain built without it: no devices, and errors that
// say so.
#include "ringtrain/backend/cuda/cuda_backend.hpp"
#include "ringtrain/backend/devices.hpp"

namespace ringtrain {

std::vector<LibraryVersion> cuda_library_versions() {
  return {{"CUDA, cuDNN, cuBLAS", "", ""}};
}

DeviceInventory probe_devices() {
  const std::string why = "built without the CUDA backend (RINGTRAIN_CUDA=OFF or no CUDA toolkit)";
  return {0, str_cat("no usable GPU (", why, ")"), why};
}

std::string device_bus_id(int device) {
  throw Error(str_cat("device_bus_id(", device, "): built without the CUDA backend"));
}

std::string enable_peer_access(int device, int peer) {
  throw Error(
      str_cat("enable_peer_access(", device, ", ", peer, "): built without the CUDA backend"));
}

std::unique_ptr<Backend> make_cuda_backend(const CudaOptions&) {
  throw Error(
      "the CUDA backend is not built into this ringtrain (configure with RINGTRAIN_CUDA=ON)");
}

void* compute_stream(Device& device) {
  throw Error(str_cat("compute_stream(", device.name(), "): built without the CUDA backend"));
}

}  // namespace ringtrain
