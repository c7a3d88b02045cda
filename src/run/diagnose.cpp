#include "ringtrain/run/diagnose.hpp"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "ringtrain/core/json_text.hpp"
#include "ringtrain/core/output_file.hpp"
#include "ringtrain/distributed/mpi_communicator.hpp"
#include "ringtrain/prof/report.hpp"
#include "ringtrain/run/probes.hpp"
#include "ringtrain/run/setup.hpp"
#include "ringtrain/run/trainer.hpp"

namespace ringtrain {
namespace {

constexpr int kFullSteps = 10;

// A folder of its own under TMPDIR, removed with everything in it when this goes.
class ScratchFolder {
 public:
  ScratchFolder() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "ringtrain-diagnose-XXXXXX").string();
    RT_CHECK(mkdtemp(pattern.data()) != nullptr, "diagnose: cannot create a scratch folder ",
             pattern, ": ", std::strerror(errno), "; set TMPDIR to a writable folder");
    path_ = pattern;
  }
  ~ScratchFolder() {
    std::error_code ignored;  // a leftover scratch folder is not worth failing the diagnosis
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Note: the full-step probe is a short training run of its own. It must never touch the job's
// checkpoints (a resume would skip its steps, a final checkpoint would become the job's newest),
// so it starts fresh and writes none, in a scratch folder (a stop signal's checkpoint lands
// there). Its epoch goes to --metrics like a training run's; --summary gets the diagnosis.
TrainConfig full_step_probe(const TrainConfig& requested, int workers, const std::string& scratch) {
  TrainConfig full = requested;
  full.workers = workers;
  full.steps = kFullSteps;
  full.evaluate = false;
  full.profile = ProfileMode::summary;
  full.summary_path.clear();
  full.checkpoint_dir = scratch;
  full.resume = ResumeFrom::none;
  full.resume_file.clear();
  full.checkpoint_every = 0;
  full.checkpoint_minutes = 0;
  full.final_checkpoint = false;
  return full;
}

std::string rate(double images_per_s) {
  return fmt::format("{:.0f} img/s", images_per_s);
}

// The mean of the epochs' GPU utilisation means; -1 where none was measured.
double mean_gpu_util(const std::vector<EpochMetrics>& epochs) {
  double sum = 0;
  int measured = 0;
  for (const EpochMetrics& m : epochs) {
    if (m.gpu_util_mean < 0) continue;
    sum += m.gpu_util_mean;
    ++measured;
  }
  return measured > 0 ? sum / measured : -1;
}

}  // namespace

int suggested_workers(int workers, double loader, double compute) {
  const double per_thread = loader / std::max(1, workers);
  return std::max(1, static_cast<int>(std::ceil(1.25 * compute / per_thread)));
}

Verdict judge(const ProbeResults& p) {
  const double data_share =
      p.step_shares[static_cast<int>(Phase::data)] + p.step_shares[static_cast<int>(Phase::copy)];
  const double comm_share = p.step_shares[static_cast<int>(Phase::comm_wait)];
  if (p.loader_images_per_s < 1.1 * p.compute_images_per_s || data_share > 0.10) {
    const int w = suggested_workers(p.workers, p.loader_images_per_s, p.compute_images_per_s);
    Verdict v{"data-bound",
              fmt::format("the loader gives {} with {} worker(s), compute consumes {}; the full "
                          "step waits for data {:.0f}% of its time",
                          rate(p.loader_images_per_s), p.workers, rate(p.compute_images_per_s),
                          100 * data_share),
              {fmt::format("--workers {} (or --workers auto)", std::max(w, p.workers + 1)),
               "--prefetch-factor 4 --persistent-workers",
               "keep the data in memory (raise --memory-budget-mb) rather than streaming it"}};
    if (!p.augment_on_device)
      v.advice.push_back(
          "--augment-on device: the loader threads only gather uint8 images (about 9x faster "
          "per thread) and the device augments them");
    return v;
  }
  if (comm_share > 0.10 || (p.allreduce_s > 0 && p.allreduce_s > 0.5 * p.backward_s)) {
    return {"communication-bound",
            fmt::format("one all-reduce of the gradients takes {:.1f} ms against a backward pass "
                        "of {:.1f} ms; the full step waits for it {:.0f}% of its time",
                        1e3 * p.allreduce_s, 1e3 * p.backward_s, 100 * comm_share),
            {"keep overlap on (drop --no-overlap); try --bucket-cap-mb 50 or 100",
             "a larger --batch-size per rank, or --accum-steps, to communicate less per image",
             "--amp bf16 on GPUs halves the gradient bytes"}};
  }
  const double slower = std::min(p.loader_images_per_s, p.compute_images_per_s);
  if (p.step_images_per_s < 0.85 * slower) {
    return {"synchronisation-bound",
            fmt::format("the full step runs at {}, well below both the loader ({}) and compute "
                        "({}): ranks wait for each other or for host-device synchronisation",
                        rate(p.step_images_per_s), rate(p.loader_images_per_s),
                        rate(p.compute_images_per_s)),
            {"look for a slow rank: --profile trace and compare the per-rank traces",
             "leave CPU cores to the training thread: fewer --workers or --threads"}};
  }
  if (p.gpu_util_percent >= 0 && p.gpu_util_percent < kHostBoundGpuPercent) {
    return {"host-bound",
            fmt::format("the GPU was busy {:.0f}% of the full steps, which wait for neither data "
                        "({:.0f}%) nor communication ({:.0f}%): it idles between kernels while "
                        "the host issues them (launches, set-up, waits for device values)",
                        p.gpu_util_percent, 100 * data_share, 100 * comm_share),
            {"a larger --batch-size per GPU: the same launches do more work each",
             "--profile trace, and Nsight Systems on the trace's NVTX ranges, to see the gaps"}};
  }
  return {"compute-bound",
          fmt::format("the full step runs at {}, close to compute alone ({}); the loader ({}) "
                      "keeps up and {}",
                      rate(p.step_images_per_s), rate(p.compute_images_per_s),
                      rate(p.loader_images_per_s),
                      p.allreduce_s < 0 ? "there is no communication (one rank)"
                                        : "communication hides under backward"),
          {"--amp bf16 on GPUs", "a larger --batch-size per device if memory allows"}};
}

std::string format_diagnosis(const ProbeResults& p, const Verdict& v) {
  std::string out = fmt::format(
      "probes (per rank):\n"
      "  loader alone ({} workers)   {:>12}\n"
      "  compute alone               {:>12}   (backward {:.1f} ms)\n"
      "  all-reduce of gradients     {:>12}\n"
      "  full training step          {:>12}   (data {:.0f}%, comm wait {:.0f}%, busy {:.0f}%)\n"
      "verdict: {}\n  {}\n",
      p.workers, rate(p.loader_images_per_s), rate(p.compute_images_per_s), 1e3 * p.backward_s,
      p.allreduce_s < 0 ? std::string("one rank") : fmt::format("{:.1f} ms", 1e3 * p.allreduce_s),
      rate(p.step_images_per_s),
      100 * (p.step_shares[static_cast<int>(Phase::data)] +
             p.step_shares[static_cast<int>(Phase::copy)]),
      100 * p.step_shares[static_cast<int>(Phase::comm_wait)], 100 * busy_share(p.step_shares),
      v.bound, v.reason);
  out += "what would help:\n";
  for (const std::string& a : v.advice) out += "  - " + a + "\n";
  return out;
}

void write_diagnosis(const std::string& path, const ProbeResults& p, const Verdict& v) {
  const nlohmann::json j = {
      {"workers", p.workers},
      {"augment_on_device", p.augment_on_device},
      {"loader_images_per_s", p.loader_images_per_s},
      {"compute_images_per_s", p.compute_images_per_s},
      {"backward_s", p.backward_s},
      {"allreduce_s", p.allreduce_s < 0 ? nlohmann::json() : nlohmann::json(p.allreduce_s)},
      {"step_images_per_s", p.step_images_per_s},
      {"step_shares", phases_json(p.step_shares)},
      {"gpu_util_percent",
       p.gpu_util_percent < 0 ? nlohmann::json() : nlohmann::json(p.gpu_util_percent)},
      {"verdict", v.bound},
      {"reason", v.reason},
      {"advice", v.advice}};
  write_text_file(path, json_text(j, 2) + "\n", "diagnose --summary");
}

ProbeResults run_probes(const TrainConfig& requested) {
  World& world = World::get();
  MpiCommunicator comm(world.comm(), comm_options(requested));
  TrainConfig config = per_rank_config(requested, world.size());
  use_cpu_share(config, world);
  RT_CHECK_AS(ConfigError, config.mode == Mode::ddp,
              "diagnose: probes the DDP configuration; drop --mode dp");
  ProbeResults p;
  {
    const Dataset data = load_data(config, comm);
    auto backend = make_backend(device_request(config), &world);
    if (config.workers == limits::kWorkersAuto)
      config.workers = choose_workers(config, data, world, *backend);
    p.workers = config.workers;
    p.augment_on_device = config.augment_on == AugmentOn::device;
    spdlog::info("probe 1/4: the loader alone");
    p.loader_images_per_s = loader_probe(config, data, world, *backend);
    spdlog::info("probe 2/4: compute alone");
    ComputeProbe compute = compute_probe(config, data, world, *backend);
    p.compute_images_per_s = compute.images_per_s;
    p.backward_s = compute.backward_s;
    spdlog::info("probe 3/4: the all-reduce alone");
    if (world.size() > 1)
      p.allreduce_s =
          allreduce_probe(config, world, *backend, comm, compute.model->parameters().flat_grads());
  }
  spdlog::info("probe 4/4: full training steps");
  const ScratchFolder scratch;
  const auto level = spdlog::get_level();
  spdlog::set_level(spdlog::level::warn);
  const TrainResult r = train(full_step_probe(requested, config.workers, scratch.path()));
  spdlog::set_level(level);
  p.step_images_per_s = r.images_per_s / world.size();
  p.step_shares = phase_shares(r.phase_totals);
  p.gpu_util_percent = mean_gpu_util(r.epochs);
  double values[4] = {p.loader_images_per_s, p.compute_images_per_s, p.backward_s, p.allreduce_s};
  comm.all_reduce_host(values, 4, ReduceOp::average);
  p.loader_images_per_s = values[0];
  p.compute_images_per_s = values[1];
  p.backward_s = values[2];
  p.allreduce_s = values[3];
  return p;
}

}  // namespace ringtrain
