#include "ringtrain/prof/gpu_monitor.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>

#include "ringtrain/core/thread_pool.hpp"

namespace ringtrain {
namespace {

// The few NVML entry points used, as nvml.h declares them (return 0 is NVML_SUCCESS).
struct NvmlMemory {
  unsigned long long total, free, used;  // nvmlMemory_t, bytes
};
using InitFn = int (*)();
using ShutdownFn = int (*)();
using HandleByBusIdFn = int (*)(const char* pci_bus_id, void** device);
using UtilizationFn = int (*)(void* device, unsigned* gpu_and_memory);
using MemoryFn = int (*)(void* device, NvmlMemory* memory);

template <class F>
F symbol(void* library, const char* name) {
  return reinterpret_cast<F>(dlsym(library, name));
}

GpuUse empty_use(const std::string& device) {
  GpuUse use;
  use.device = device;
  return use;
}

}  // namespace

void merge_use(GpuUse& into, const GpuUse& more) {
  if (more.samples == 0) return;
  if (into.samples == 0) {
    into = more;
    return;
  }
  const int n = into.samples + more.samples;
  into.util_mean = (into.util_mean * into.samples + more.util_mean * more.samples) / n;
  into.util_min = std::min(into.util_min, more.util_min);
  into.memory_used_max = std::max(into.memory_used_max, more.memory_used_max);
  into.memory_total = more.memory_total;
  into.samples = n;
}

GpuUse all_devices(const std::vector<GpuUse>& uses) {
  GpuUse all = empty_use("all");
  double sum = 0;
  int devices = 0;
  for (const GpuUse& use : uses) {
    if (use.samples == 0) continue;
    sum += use.util_mean;
    all.util_min = devices == 0 ? use.util_min : std::min(all.util_min, use.util_min);
    all.memory_used_max = std::max(all.memory_used_max, use.memory_used_max);
    all.memory_total = std::max(all.memory_total, use.memory_total);
    all.samples += use.samples;
    ++devices;
  }
  if (devices > 0) all.util_mean = sum / devices;
  return all;
}

GpuMonitor::GpuMonitor(const std::vector<std::string>& pci_bus_ids, double interval_s) {
  for (const std::string& id : pci_bus_ids) spans_.push_back(empty_use(id));
  util_sums_.assign(spans_.size(), 0);
  if (pci_bus_ids.empty()) {
    why_ = "no GPU in use";
    return;
  }
  if (!open_nvml(pci_bus_ids)) return;
  try {
    thread_ = start_thread("GPU monitor", 0, 1, [this, interval_s] { run(interval_s); });
  } catch (const Error& e) {
    why_ = e.what();
    return;
  }
  available_ = true;
}

GpuMonitor::GpuMonitor(const std::vector<std::string>& devices, Sampler sampler)
    : available_(true), sampler_(std::move(sampler)) {
  for (const std::string& id : devices) spans_.push_back(empty_use(id));
  util_sums_.assign(spans_.size(), 0);
}

// Loads NVML and opens every device; on failure says why and leaves the monitor unavailable.
bool GpuMonitor::open_nvml(const std::vector<std::string>& pci_bus_ids) {
  library_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library_) {
    why_ = str_cat("cannot load libnvidia-ml.so.1: ", dlerror());
    return false;
  }
  const auto init = symbol<InitFn>(library_, "nvmlInit_v2");
  const auto by_bus = symbol<HandleByBusIdFn>(library_, "nvmlDeviceGetHandleByPciBusId_v2");
  const auto utilization = symbol<UtilizationFn>(library_, "nvmlDeviceGetUtilizationRates");
  const auto memory = symbol<MemoryFn>(library_, "nvmlDeviceGetMemoryInfo");
  if (!init || !by_bus || !utilization || !memory) {
    why_ = "libnvidia-ml.so.1 lacks the NVML functions used";
    return false;
  }
  if (init() != 0) {
    why_ = "nvmlInit_v2 failed";
    return false;
  }
  nvml_initialised_ = true;
  for (const std::string& id : pci_bus_ids) {
    handles_.push_back(nullptr);
    if (by_bus(id.c_str(), &handles_.back()) != 0) {
      why_ = str_cat("NVML cannot open the device at PCI ", id);
      return false;
    }
  }
  sampler_ = [this, utilization, memory](size_t i, GpuSample& s) {
    unsigned rates[2] = {0, 0};  // nvmlUtilization_t: gpu, memory
    NvmlMemory bytes{};
    if (utilization(handles_[i], rates) != 0 || memory(handles_[i], &bytes) != 0) return false;
    s = {double(rates[0]), double(bytes.used), double(bytes.total)};
    return true;
  };
  return true;
}

GpuMonitor::~GpuMonitor() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (nvml_initialised_) symbol<ShutdownFn>(library_, "nvmlShutdown")();
  if (library_) dlclose(library_);
}

void GpuMonitor::run(double interval_s) {
  const auto interval = std::chrono::duration<double>(interval_s);
  while (!stop_) {
    sample();
    std::this_thread::sleep_for(interval);
  }
}

void GpuMonitor::sample() {
  for (size_t i = 0; i < spans_.size(); ++i) {
    GpuSample s;
    if (!sampler_(i, s)) continue;
    std::lock_guard<std::mutex> lock(mutex_);
    GpuUse& use = spans_[i];
    util_sums_[i] += s.util_percent;
    use.util_min = use.samples == 0 ? s.util_percent : std::min(use.util_min, s.util_percent);
    use.memory_used_max = std::max(use.memory_used_max, s.memory_used);
    use.memory_total = s.memory_total;
    use.util_mean = util_sums_[i] / ++use.samples;
  }
}

std::vector<GpuUse> GpuMonitor::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<GpuUse> spans = spans_;
  for (GpuUse& use : spans_) use = empty_use(use.device);
  util_sums_.assign(spans_.size(), 0);
  return spans;
}

}  // namespace ringtrain
