#pragma once
#include <atomic>
#include <mutex>
#include <string>
#include <thread>

namespace ringtrain {

// GPU utilisation as the driver reports it (NVML's "percent of time a kernel ran"), sampled in
// a background thread. NVML is loaded at run time from the driver's libnvidia-ml.so.1 (no
// header or link-time dependency); where it or the device is missing, available() is false and
// the monitor samples nothing.
class GpuMonitor {
 public:
  struct Stats {
    double mean = -1, min = -1;  // percent; -1 when there are no samples
    int samples = 0;
  };

  // pci_bus_id: the device to watch (device_bus_id()); empty: none.
  explicit GpuMonitor(const std::string& pci_bus_id, double interval_s = 0.2);
  ~GpuMonitor();
  GpuMonitor(const GpuMonitor&) = delete;
  GpuMonitor& operator=(const GpuMonitor&) = delete;

  bool available() const { return available_; }
  const std::string& why_unavailable() const { return why_; }
  // Statistics of the samples since the last call.
  Stats take();

 private:
  void run(double interval_s);

  bool available_ = false;
  std::string why_;
  void* library_ = nullptr;
  void* device_ = nullptr;
  int (*utilization_)(void*, unsigned* gpu_and_memory) = nullptr;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mutex_;
  double sum_ = 0, min_ = 101;
  int samples_ = 0;
};

}  // namespace ringtrain
