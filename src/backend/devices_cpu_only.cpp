#include "ringtrain/backend/devices.hpp"

namespace ringtrain {

DeviceInventory probe_devices() {
  return {0, false, "built without the CUDA backend (RINGTRAIN_CUDA=OFF or no CUDA toolkit)"};
}

}  // namespace ringtrain
