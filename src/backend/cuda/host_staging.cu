#include <cstring>

#include "host_staging.hpp"
#include "ringtrain/backend/cuda/cuda_check.hpp"

namespace ringtrain::cuda {

HostStaging::HostStaging() {
  RT_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&slots_), kSlots * kSlotBytes));
  for (cudaEvent_t& e : read_) RT_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
}

HostStaging::~HostStaging() {
  for (cudaEvent_t e : read_) warn_on_error(cudaEventDestroy(e), "cudaEventDestroy");
  warn_on_error(cudaFreeHost(slots_), "cudaFreeHost");
}

void HostStaging::write(const void* host, std::size_t bytes, void* device, cudaStream_t stream) {
  RT_CHECK(bytes <= kSlotBytes, "write: ", bytes, " bytes is more than the ", kSlotBytes,
           " a write stages; copy larger buffers with copy_to_device_async");
  const int slot = next_;
  next_ = (next_ + 1) % kSlots;
  if (in_use_[slot]) RT_CUDA_CHECK(cudaEventSynchronize(read_[slot]));
  unsigned char* staged = slots_ + static_cast<std::size_t>(slot) * kSlotBytes;
  std::memcpy(staged, host, bytes);
  RT_CUDA_CHECK(cudaMemcpyAsync(device, staged, bytes, cudaMemcpyHostToDevice, stream));
  RT_CUDA_CHECK(cudaEventRecord(read_[slot], stream));
  in_use_[slot] = true;
}

}  // namespace ringtrain::cuda
