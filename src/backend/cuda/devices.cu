#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <dlfcn.h>

#include "ringtrain/backend/cuda/cuda_check.hpp"
#include "ringtrain/backend/devices.hpp"
#include "ringtrain/core/error.hpp"

namespace ringtrain {

namespace {

// Why cudaGetDeviceCount found no GPU, as a user would say it. CUDA reports a missing driver
// as an insufficient one: whether the driver's library loads tells them apart.
std::string no_gpu_reason(cudaError_t status) {
  if (status == cudaErrorInsufficientDriver || status == cudaErrorStubLibrary) {
    void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!driver) return "no usable GPU (no NVIDIA driver)";
    dlclose(driver);
    return "no usable GPU (the NVIDIA driver is older than this build's CUDA runtime)";
  }
  if (status == cudaErrorNoDevice) return "no usable GPU (no CUDA device visible)";
  return str_cat("no usable GPU (", cudaGetErrorString(status), ")");
}

}  // namespace

std::vector<LibraryVersion> cuda_library_versions() {
  int runtime = 0, driver = 0;
  const bool runtime_known = cudaRuntimeGetVersion(&runtime) == cudaSuccess;
  const bool driver_known = cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0;
  int cublas[3] = {0, 0, 0};
  const bool cublas_known = cublasGetProperty(MAJOR_VERSION, &cublas[0]) == CUBLAS_STATUS_SUCCESS &&
                            cublasGetProperty(MINOR_VERSION, &cublas[1]) == CUBLAS_STATUS_SUCCESS &&
                            cublasGetProperty(PATCH_LEVEL, &cublas[2]) == CUBLAS_STATUS_SUCCESS;
  const int cudnn = static_cast<int>(cudnnGetVersion());
  return {{"CUDA runtime", dotted(CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10),
           runtime_known ? dotted(runtime / 1000, runtime % 1000 / 10) : ""},
          {"CUDA driver", "",
           driver_known ? dotted(driver / 1000, driver % 1000 / 10) : "no NVIDIA driver found"},
          {"cuDNN", dotted(CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL),
           dotted(cudnn / 10000, cudnn % 10000 / 100, cudnn % 100)},
          {"cuBLAS", dotted(CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR, CUBLAS_VER_PATCH),
           cublas_known ? dotted(cublas[0], cublas[1], cublas[2]) : ""}};
}

DeviceInventory probe_devices() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  // No driver or no device is an answer here, not a failure: the CPU backend takes over.
  if (status != cudaSuccess) {
    cudaGetLastError();
    return {0, no_gpu_reason(status),
            std::string("cudaGetDeviceCount: ") + cudaGetErrorString(status)};
  }
  if (count == 0) return {0, "no usable GPU (no CUDA device visible)", "no CUDA device visible"};
  return {count, "", ""};
}

std::string device_bus_id(int device) {
  char id[32] = {};
  const cudaError_t status = cudaDeviceGetPCIBusId(id, sizeof(id), device);
  if (status != cudaSuccess)
    throw Error(str_cat("cudaDeviceGetPCIBusId(", device, ") returned ", status, " (",
                        cudaGetErrorString(status), ")"));
  return id;
}

namespace {

// Peer access from the current device to `peer`; enabling it twice is not an error.
void enable_access_to(int peer) {
  const cudaError_t status = cudaDeviceEnablePeerAccess(peer, 0);
  if (status == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();
    return;
  }
  RT_CUDA_CHECK(status);
}

}  // namespace

std::string enable_peer_access(int device, int peer) {
  int forward = 0, backward = 0;
  RT_CUDA_CHECK(cudaDeviceCanAccessPeer(&forward, device, peer));
  RT_CUDA_CHECK(cudaDeviceCanAccessPeer(&backward, peer, device));
  if (!forward || !backward) return "through host memory";
  int current = 0;
  RT_CUDA_CHECK(cudaGetDevice(&current));
  RT_CUDA_CHECK(cudaSetDevice(device));
  enable_access_to(peer);
  RT_CUDA_CHECK(cudaSetDevice(peer));
  enable_access_to(device);
  RT_CUDA_CHECK(cudaSetDevice(current));
  return "peer-to-peer";
}

}  // namespace ringtrain
