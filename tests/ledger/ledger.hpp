#pragma once
// The launch ledger: what the CUDA backend asked of CUDA, cuDNN, cuBLAS and NCCL, counted by a
// stand-in for those libraries (stub_runtime.cpp, stub_libraries.cpp) that runs no kernel. The
// real src/backend/cuda code links against it, so a training step's launches, library calls,
// host waits and allocations are counted on a machine without a GPU. "Device" memory is host
// memory: copies and fills are done, kernels are only counted, so values are meaningless.
#include <cstdint>
#include <map>
#include <string>

namespace ringtrain::ledger {

struct Counts {
  std::map<std::string, int64_t> kernels;  // launches by kernel (its body's type, demangled)
  std::map<std::string, int64_t> calls;    // library calls by function name
  int64_t launches = 0;                    // kernel launches
  int64_t library_work = 0;  // cuDNN and cuBLAS calls that run on the device, NCCL collectives
  // Host waits: cudaStreamSynchronize, and cudaEventSynchronize of an event recorded since the
  // last reset (this step's work: the host stalls until the device drains it).
  int64_t host_waits = 0;
  // cudaEventSynchronize of an event recorded before the last reset: a wait for an earlier
  // step's work, which lets the host run that far ahead of the device.
  int64_t earlier_waits = 0;
  int64_t allocations = 0;  // cudaMalloc, cudaMallocHost, cudaHostAlloc
  int64_t descriptors = 0;  // cuDNN descriptor creations and settings
  int64_t copies = 0;       // cudaMemcpyAsync, cudaMemcpyPeerAsync, cudaMemsetAsync
  // Stream capture: kernel launches, device library calls and copies recorded into a graph
  // (between cudaStreamBeginCapture and cudaStreamEndCapture: not counted above), and graphs
  // launched. A call that would break a capture (a wait, an allocation, a copy from or to the
  // host) throws instead, naming itself.
  int64_t captured = 0;
  int64_t graph_launches = 0;

  // Launches whose kernel name contains `part`.
  int64_t launches_of(const std::string& part) const;
};

// What has been counted since the last reset.
const Counts& counts();
void reset();

// The compute capability the stand-in device reports (default 7.5).
void set_compute_capability(int major, int minor);

// For the stand-in libraries: a call counted under its name (`work`: it runs on the device,
// or is captured), and a cuDNN descriptor's creation or setting.
void count_call(const char* name, bool work);
void count_descriptor(const char* name);

}  // namespace ringtrain::ledger
