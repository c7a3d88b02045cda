#pragma once
#include <string>
#include <vector>

#include "ringtrain/data/dataset.hpp"
#include "ringtrain/distributed/world.hpp"
#include "ringtrain/prof/step_profiler.hpp"
#include "ringtrain/run_config/config.hpp"

namespace ringtrain {

// What the short probes of `ringtrain diagnose` measured, per rank, averaged over the ranks.
struct ProbeResults {
  int workers = 0;                  // loader threads of the probes
  bool augment_on_device = false;   // --augment-on device: the loader only gathers
  double loader_images_per_s = 0;   // the loader alone
  double compute_images_per_s = 0;  // training steps on a batch already on the device
  double backward_s = 0;            // one backward pass of those steps
  double allreduce_s = -1;          // one all-reduce of the gradients; -1 with one rank
  double step_images_per_s = 0;     // full training steps with the real loader
  PhaseTimes step_shares{};         // where the full steps' time went
  double gpu_util_percent = -1;     // the GPUs' mean utilisation in them; -1: not measured
};

// The bottleneck and what would help: "data-bound", "communication-bound",
// "synchronisation-bound" (the full step is well below both its loader and its compute),
// "host-bound" (none of those, but the GPUs were busy less than kHostBoundGpuPercent of the
// full steps) or "compute-bound", with the numbers that say so.
struct Verdict {
  std::string bound;
  std::string reason;
  std::vector<std::string> advice;
};
Verdict judge(const ProbeResults& p);

// Loader threads for 1.25x headroom over `compute` img/s, when `workers` threads (0: the
// training thread alone) give `loader` img/s and scaling is linear.
int suggested_workers(int workers, double loader, double compute);

std::string format_diagnosis(const ProbeResults& p, const Verdict& v);
// --summary of `ringtrain diagnose`: the probes and the verdict as JSON.
void write_diagnosis(const std::string& path, const ProbeResults& p, const Verdict& v);

// Runs the probes on every rank of the world (they are collective), a few seconds each. They
// never read or write the job's checkpoints; the full-step probe's epoch goes to --metrics.
ProbeResults run_probes(const TrainConfig& config);

}  // namespace ringtrain
