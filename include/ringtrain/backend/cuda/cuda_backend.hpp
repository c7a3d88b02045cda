#pragma once
#include <memory>
#include <string>

#include "ringtrain/backend/backend.hpp"

namespace ringtrain {

// What the CUDA backend computes in and where. Activations are NHWC in `compute` (bf16, f16 or
// f32); parameters stay f32 (master weights) with a compute-dtype copy for the ops.
struct CudaOptions {
  int device = 0;                      // CUDA device index as this process sees it
  DType compute = DType::bf16;         // bf16, f16 or f32
  int rank = 0;                        // named in every error message
  std::size_t workspace_mb = 256;      // cuDNN workspace limit per convolution
  bool deterministic = false;          // cuDNN algorithms by heuristic rank, deterministic ones
  std::string conv_algo_cache;         // the file of cuDNN's searches shared by processes; "": none
  bool force_padded_channels = false;  // tests: pad every convolution's odd input channels
};

// The CUDA backend (cuDNN, cuBLAS and our kernels). Throws when ringtrain was built without
// CUDA or the device cannot be used.
std::unique_ptr<Backend> make_cuda_backend(const CudaOptions& options);

// The compute stream (a cudaStream_t) of a CUDA backend's device, for the NCCL communicator to
// order its collectives against; throws for any other device.
void* compute_stream(Device& device);

}  // namespace ringtrain
