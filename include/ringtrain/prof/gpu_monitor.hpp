#pragma once
#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ringtrain {

// One reading of one GPU.
struct GpuSample {
  double util_percent = 0;  // NVML's "percent of time a kernel ran" over its last period
  double memory_used = 0, memory_total = 0;  // bytes
};

// One GPU over a span of samples; -1 where there were none.
struct GpuUse {
  std::string device;  // its PCI bus id
  double util_mean = -1, util_min = -1;
  double memory_used_max = -1, memory_total = -1;  // bytes
  int samples = 0;
};

// Adds the samples of `more` (the same device, a later span) to `into`.
void merge_use(GpuUse& into, const GpuUse& more);
// The devices together ("all"): the mean of their utilisation means, the least minimum, the
// most memory used on any; -1 where none has samples.
GpuUse all_devices(const std::vector<GpuUse>& uses);

// Utilisation and memory of each GPU a process drives (one under DDP, every replica's under
// DataParallel), sampled in a background thread. NVML is loaded at run time from the driver's
// libnvidia-ml.so.1 (no header or link-time dependency); where it or a device is missing,
// available() is false and the monitor samples nothing.
class GpuMonitor {
 public:
  // Reads device `index` (of the list given); false when it could not.
  using Sampler = std::function<bool(size_t index, GpuSample& sample)>;

  // NVML, every interval_s, on the devices at these PCI bus ids (device_bus_id()); none: no GPU.
  explicit GpuMonitor(const std::vector<std::string>& pci_bus_ids, double interval_s = 0.2);
  // Tests: `sampler` on `devices`, no thread; sample() takes the readings.
  GpuMonitor(const std::vector<std::string>& devices, Sampler sampler);
  ~GpuMonitor();
  GpuMonitor(const GpuMonitor&) = delete;
  GpuMonitor& operator=(const GpuMonitor&) = delete;

  bool available() const { return available_; }
  const std::string& why_unavailable() const { return why_; }
  // One reading of every device, now (what the thread does every interval).
  void sample();
  // Each device's use since the last call, in the order given.
  std::vector<GpuUse> take();

 private:
  bool open_nvml(const std::vector<std::string>& pci_bus_ids);
  void run(double interval_s);

  bool available_ = false;
  std::string why_;
  void* library_ = nullptr;
  bool nvml_initialised_ = false;
  std::vector<void*> handles_;
  Sampler sampler_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mutex_;
  std::vector<GpuUse> spans_;
  std::vector<double> util_sums_;
};

}  // namespace ringtrain
