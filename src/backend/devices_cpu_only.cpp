#include "ringtrain/backend/cuda/cuda_backend.hpp"
#include "ringtrain/backend/devices.hpp"

namespace ringtrain {

DeviceInventory probe_devices() {
  return {0, false, "built without the CUDA backend (RINGTRAIN_CUDA=OFF or no CUDA toolkit)"};
}

std::unique_ptr<Backend> make_cuda_backend(const CudaOptions&) {
  throw Error("the CUDA backend is not built into this ringtrain (configure with RINGTRAIN_CUDA=ON)");
}

}  // namespace ringtrain
