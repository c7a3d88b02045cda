// The CUDA runtime of the launch ledger: every function the CUDA backend calls, answering as one
// idle device would, with its memory in host memory (ledger.hpp). Kernels are registered by
// nvcc's start-up code with their names, and each launch is counted under its kernel's name.
#include <cuda_runtime_api.h>
#include <cxxabi.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include "ledger.hpp"

namespace ringtrain::ledger {
namespace {

std::mutex mutex;
Counts state;
// Host stub -> demangled kernel name; filled by nvcc's static initialisers, so constructed on
// first use.
std::map<const void*, std::string>& kernel_names() {
  static std::map<const void*, std::string> names;
  return names;
}
int cc_major = 7, cc_minor = 5;
// Each event's count of resets when it was last recorded: a wait for an event recorded before
// the last reset waits for an earlier step's work, not for this one's.
std::map<cudaEvent_t, int64_t> recorded_in;
int64_t resets = 0;
// Between cudaStreamBeginCapture and cudaStreamEndCapture on this thread: the backend captures
// in thread-local mode, where other threads (the loader's) may still allocate and free.
thread_local bool capturing = false;

// Handles for streams and events: distinct addresses that are never dereferenced.
char handles[4096];
int next_handle = 0;

template <class H>
H new_handle() {
  const std::lock_guard<std::mutex> lock(mutex);
  return reinterpret_cast<H>(&handles[next_handle++ % sizeof(handles)]);
}

std::string demangled(const char* name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name, nullptr, nullptr, &status),
                                             std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(name);
}

// A call that would break a stream capture: an error, as CUDA gives one.
void refuse_in_capture(const char* call) {
  if (capturing)
    throw std::logic_error(std::string("launch ledger: ") + call + " while a stream is captured");
}

// Device work: recorded into the graph while capturing, counted in `field` otherwise.
void count_work(int64_t Counts::*field) {
  ++(capturing ? state.captured : state.*field);
}

void* host_memory(size_t bytes) {
  refuse_in_capture("an allocation");
  const std::lock_guard<std::mutex> lock(mutex);
  ++state.allocations;
  return std::aligned_alloc(256, (std::max<size_t>(bytes, 1) + 255) / 256 * 256);
}

void count(int64_t Counts::*field) {
  const std::lock_guard<std::mutex> lock(mutex);
  count_work(field);
}

}  // namespace

int64_t Counts::launches_of(const std::string& part) const {
  int64_t n = 0;
  for (const auto& [name, launched] : kernels)
    if (name.find(part) != std::string::npos) n += launched;
  return n;
}

const Counts& counts() {
  return state;
}

void reset() {
  const std::lock_guard<std::mutex> lock(mutex);
  state = Counts{};
  ++resets;
}

void set_compute_capability(int major, int minor) {
  cc_major = major;
  cc_minor = minor;
}

void count_call(const char* name, bool work) {
  const std::lock_guard<std::mutex> lock(mutex);
  ++state.calls[name];
  if (work) count_work(&Counts::library_work);
}

void count_descriptor(const char* name) {
  count_call(name, false);
  count(&Counts::descriptors);
}

}  // namespace ringtrain::ledger

using namespace ringtrain::ledger;

extern "C" {

void** __cudaRegisterFatBinary(void* fat_cubin) {
  static void* handle = nullptr;
  handle = fat_cubin;
  return &handle;
}
void __cudaRegisterFatBinaryEnd(void**) {}
void __cudaUnregisterFatBinary(void**) {}
void __cudaRegisterFunction(void**, const char* host_fun, char*, const char* device_name, int,
                            uint3*, uint3*, dim3*, dim3*, int*) {
  kernel_names()[host_fun] = demangled(device_name);
}
unsigned __cudaPushCallConfiguration(dim3, dim3, size_t, struct CUstream_st*) {
  return 0;
}
cudaError_t __cudaPopCallConfiguration(dim3*, dim3*, size_t*, void*) {
  return cudaSuccess;
}
cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* fun) {
  *kernel = reinterpret_cast<cudaKernel_t>(const_cast<void*>(fun));
  return cudaSuccess;
}
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3, dim3, void**, size_t, cudaStream_t) {
  const std::lock_guard<std::mutex> lock(mutex);
  if (capturing) {
    ++state.captured;
    return cudaSuccess;
  }
  ++state.launches;
  const auto name = kernel_names().find(reinterpret_cast<const void*>(kernel));
  ++state.kernels[name == kernel_names().end() ? std::string("unregistered") : name->second];
  return cudaSuccess;
}

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int) {
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int) {
  std::memset(prop, 0, sizeof(*prop));
  std::strcpy(prop->name, "launch ledger");
  prop->major = cc_major;
  prop->minor = cc_minor;
  prop->totalGlobalMem = size_t{80} << 30;
  prop->multiProcessorCount = 132;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetPCIBusId(char* bus_id, int length, int) {
  std::snprintf(bus_id, static_cast<size_t>(length), "%s", "0000:00:00.0");
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* version) {
  *version = CUDART_VERSION;
  return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int* version) {
  *version = CUDART_VERSION;
  return cudaSuccess;
}
cudaError_t cudaDeviceCanAccessPeer(int* can, int, int) {
  *can = 0;
  return cudaSuccess;
}
cudaError_t cudaDeviceEnablePeerAccess(int, unsigned) {
  return cudaSuccess;
}
cudaError_t cudaGetLastError() {
  return cudaSuccess;
}
cudaError_t cudaPeekAtLastError() {
  return cudaSuccess;
}
const char* cudaGetErrorString(cudaError_t) {
  return "launch ledger";
}

cudaError_t cudaMalloc(void** p, size_t bytes) {
  *p = host_memory(bytes);
  return cudaSuccess;
}
cudaError_t cudaFree(void* p) {
  refuse_in_capture("cudaFree");
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaMallocHost(void** p, size_t bytes) {
  *p = host_memory(bytes);
  return cudaSuccess;
}
cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned) {
  *p = host_memory(bytes);
  return cudaSuccess;
}
cudaError_t cudaFreeHost(void* p) {
  refuse_in_capture("cudaFreeHost");
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t) {
  if (kind != cudaMemcpyDeviceToDevice) refuse_in_capture("a copy from or to the host");
  std::memmove(dst, src, bytes);
  count(&Counts::copies);
  return cudaSuccess;
}
cudaError_t cudaMemcpyPeerAsync(void* dst, int, const void* src, int, size_t bytes, cudaStream_t) {
  std::memmove(dst, src, bytes);
  count(&Counts::copies);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t) {
  std::memset(p, value, bytes);
  count(&Counts::copies);
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned) {
  *stream = new_handle<cudaStream_t>();
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t) {
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) {
  refuse_in_capture("cudaStreamSynchronize");
  count(&Counts::host_waits);
  return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned) {
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* event) {
  *event = new_handle<cudaEvent_t>();
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned) {
  *event = new_handle<cudaEvent_t>();
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t) {
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t) {
  const std::lock_guard<std::mutex> lock(mutex);
  recorded_in[event] = resets;
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t) {
  refuse_in_capture("cudaEventQuery");
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  refuse_in_capture("cudaEventSynchronize");
  const std::lock_guard<std::mutex> lock(mutex);
  const auto recorded = recorded_in.find(event);
  if (recorded != recorded_in.end() && recorded->second < resets) {
    ++state.earlier_waits;
  } else {
    ++state.host_waits;
  }
  return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t, cudaEvent_t) {
  refuse_in_capture("cudaEventElapsedTime");
  *ms = 0.125f;
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t, cudaStreamCaptureMode) {
  refuse_in_capture("cudaStreamBeginCapture");
  capturing = true;
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t* graph) {
  if (!capturing) throw std::logic_error("launch ledger: cudaStreamEndCapture without a capture");
  capturing = false;
  *graph = new_handle<cudaGraph_t>();
  return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t, unsigned long long) {
  *exec = new_handle<cudaGraphExec_t>();
  return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t, cudaStream_t) {
  refuse_in_capture("cudaGraphLaunch");
  count(&Counts::graph_launches);
  return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t) {
  return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t) {
  return cudaSuccess;
}

}  // extern "C"
