#include "ringtrain/prof/gpu_monitor.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>

#include "ringtrain/core/thread_pool.hpp"

namespace ringtrain {
namespace {

// The few NVML entry points used, as nvml.h declares them (return 0 is NVML_SUCCESS).
using InitFn = int (*)();
using ShutdownFn = int (*)();
using HandleByBusIdFn = int (*)(const char* pci_bus_id, void** device);
using UtilizationFn = int (*)(void* device, unsigned* gpu_and_memory);

template <class F>
F symbol(void* library, const char* name) {
  return reinterpret_cast<F>(dlsym(library, name));
}

}  // namespace

GpuMonitor::GpuMonitor(const std::string& pci_bus_id, double interval_s) {
  if (pci_bus_id.empty()) {
    why_ = "no GPU in use";
    return;
  }
  library_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library_) {
    why_ = str_cat("cannot load libnvidia-ml.so.1: ", dlerror());
    return;
  }
  const auto init = symbol<InitFn>(library_, "nvmlInit_v2");
  const auto by_bus = symbol<HandleByBusIdFn>(library_, "nvmlDeviceGetHandleByPciBusId_v2");
  utilization_ = symbol<UtilizationFn>(library_, "nvmlDeviceGetUtilizationRates");
  if (!init || !by_bus || !utilization_) {
    why_ = "libnvidia-ml.so.1 lacks the NVML functions used";
    return;
  }
  if (init() != 0 || by_bus(pci_bus_id.c_str(), &device_) != 0) {
    why_ = str_cat("NVML cannot open the device at PCI ", pci_bus_id);
    return;
  }
  try {
    thread_ = start_thread("GPU monitor", 0, 1, [this, interval_s] { run(interval_s); });
  } catch (const Error& e) {
    symbol<ShutdownFn>(library_, "nvmlShutdown")();
    why_ = e.what();
    return;
  }
  available_ = true;
}

GpuMonitor::~GpuMonitor() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (available_) symbol<ShutdownFn>(library_, "nvmlShutdown")();
  if (library_) dlclose(library_);
}

void GpuMonitor::run(double interval_s) {
  const auto interval = std::chrono::duration<double>(interval_s);
  while (!stop_) {
    unsigned rates[2] = {0, 0};  // nvmlUtilization_t: gpu, memory
    if (utilization_(device_, rates) == 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      sum_ += rates[0];
      min_ = std::min(min_, double(rates[0]));
      ++samples_;
    }
    std::this_thread::sleep_for(interval);
  }
}

GpuMonitor::Stats GpuMonitor::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  Stats s;
  if (samples_ > 0) s = {sum_ / samples_, min_, samples_};
  sum_ = 0;
  min_ = 101;
  samples_ = 0;
  return s;
}

}  // namespace ringtrain
