#include "ringtrain/report/run_report.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "ringtrain/core/atomic_file.hpp"
#include "ringtrain/core/host.hpp"
#include "ringtrain/core/json_text.hpp"
#include "ringtrain/core/output_file.hpp"
#include "ringtrain/core/version.hpp"
#include "ringtrain/prof/report.hpp"

namespace ringtrain {
namespace {

// Note: a line rewritten in place only when one process writes to a terminal. mpirun hands its
// ranks a pseudo-terminal even when the job's output goes to a file, so several ranks get plain
// lines; environment variables cannot decide it (a singleton MPI_Init sets PMIX_* too).
bool rewrite_in_place(bool root, int world_size) {
  return root && world_size == 1 && isatty(STDOUT_FILENO) == 1;
}

// "2026-12-03T16:40:05Z"
std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

nlohmann::json percent_or_null(double v) {
  return v < 0 ? nlohmann::json() : nlohmann::json(v);
}

// Each GPU's use: utilisation in percent, memory in MiB (null where not measured).
nlohmann::json gpus_json(const std::vector<GpuUse>& uses) {
  const auto mib = [](double bytes) { return percent_or_null(bytes < 0 ? -1 : bytes / 1048576); };
  nlohmann::json all = nlohmann::json::array();
  for (const GpuUse& u : uses)
    all.push_back({{"device", u.device},
                   {"util_mean", percent_or_null(u.util_mean)},
                   {"util_min", percent_or_null(u.util_min)},
                   {"memory_used_max_mib", mib(u.memory_used_max)},
                   {"memory_total_mib", mib(u.memory_total)}});
  return all;
}

// Each GPU over the whole run.
std::vector<GpuUse> run_gpus(const std::vector<EpochMetrics>& epochs) {
  std::vector<GpuUse> run;
  for (const EpochMetrics& m : epochs) {
    run.resize(std::max(run.size(), m.gpus.size()));
    for (size_t d = 0; d < m.gpus.size(); ++d) {
      run[d].device = m.gpus[d].device;
      merge_use(run[d], m.gpus[d]);
    }
  }
  return run;
}

// " (per GPU: 0000:01:00.0 91%, 0000:41:00.0 88%)" when more than one GPU was measured.
std::string per_gpu_text(const std::vector<GpuUse>& uses) {
  if (uses.size() < 2) return "";
  std::string text;
  for (const GpuUse& u : uses)
    text += fmt::format("{}{} {}", text.empty() ? " (per GPU: " : ", ", u.device,
                        u.util_mean < 0 ? "n/a" : fmt::format("{:.0f}%", u.util_mean));
  return text + ")";
}

double seconds_between(std::chrono::steady_clock::time_point a,
                       std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// What produced a result and how to produce it again: the version, the machine, the devices
// and the effective configuration (`train --config` reads it back), with a one-line
// description for humans.
nlohmann::json provenance(const TrainConfig& c, const TrainResult& r) {
  return {{"version", RINGTRAIN_VERSION}, {"host", host_name()},
          {"cpu", cpu_model()},           {"devices", r.devices},
          {"description", describe(c)},   {"config", c.effective_config}};
}

}  // namespace

std::string format_duration(double seconds) {
  const int64_t t = static_cast<int64_t>(seconds);
  return t >= 60 ? str_cat(t / 60, "m", t % 60 < 10 ? "0" : "", t % 60, "s") : str_cat(t, "s");
}

double achieved_tflops(const TrainResult& r) {
  return r.images_per_s * 6.0 * static_cast<double>(r.macs_per_image) * 1e-12;
}

RunReport::RunReport(const TrainConfig& config, bool root, int world_size, int64_t total_steps,
                     int64_t epochs, int64_t global_batch)
    : config_(config),
      root_(root),
      terminal_(rewrite_in_place(root, world_size)),
      total_steps_(total_steps),
      epochs_(epochs),
      global_batch_(global_batch),
      start_(Clock::now()),
      last_line_(start_) {}

void RunReport::begin(int64_t start_step, const std::string& resumed_from) {
  start_step_ = start_step;
  start_ = last_line_ = Clock::now();
  if (!root_ || config_.metrics_path.empty()) return;
  const bool resumed = !resumed_from.empty();
  try {
    metrics_ = OutputStream(config_.metrics_path, "--metrics", resumed);
  } catch (const UnreadStreamError& e) {
    spdlog::warn("{}; this run writes no metrics", e.what());
  }
  if (!resumed) return;
  const nlohmann::json marker = {{"segment", "resumed"},
                                 {"step", start_step},
                                 {"checkpoint", resumed_from},
                                 {"time", utc_now()}};
  write_metrics(json_text(marker) + "\n");
}

void RunReport::write_metrics(const std::string& text) {
  if (!metrics_.is_open()) return;
  try {
    metrics_.write(text);
  } catch (const UnreadStreamError& e) {
    spdlog::warn("{}; this run writes no more metrics", e.what());
    metrics_ = OutputStream();
  }
}

bool RunReport::progress_due(int64_t step) {
  return root_ && line_due(terminal_ ? 0.5 : config_.log_interval_s, step + 1 == total_steps_);
}

void RunReport::progress(int64_t epoch, int64_t step, double loss, double lr) {
  if (!root_) return;
  const bool last = step + 1 == total_steps_;
  const double elapsed = seconds_between(start_, last_line_);
  const double done = static_cast<double>(step + 1 - start_step_);  // by this process
  const std::string line =
      str_cat("epoch ", epoch + 1, "/", epochs_, " step ", step + 1, "/", total_steps_, " loss ",
              fmt::format("{:.4f}", loss), " lr ", fmt::format("{:.4g}", lr), " ",
              fmt::format("{:.1f}", done * double(global_batch_) / elapsed), " img/s ETA ",
              format_duration(elapsed / done * double(total_steps_ - step - 1)));
  print_line(line, last);
}

void RunReport::evaluation_progress(int64_t batch, int64_t batches) {
  if (!root_ || batch >= batches || !line_due(config_.log_interval_s, false)) return;
  print_line(fmt::format("evaluation: batch {} of {} ({}%)", batch, batches, 100 * batch / batches),
             false);
}

bool RunReport::line_due(double interval, bool last) {
  const auto now = Clock::now();
  if (seconds_between(last_line_, now) < interval && !last) return false;
  last_line_ = now;
  return true;
}

void RunReport::print_line(const std::string& line, bool last) {
  if (terminal_) {
    std::printf("\r%-100s%s", line.c_str(), last ? "\n" : "");
    std::fflush(stdout);
  } else {
    spdlog::info("{}", line);
  }
}

void RunReport::epoch_done(const EpochMetrics& m) {
  if (!root_) return;
  if (terminal_) std::printf("\n");
  const std::string test = !config_.evaluate ? std::string("not evaluated")
                                             : fmt::format("loss {:.4f} acc {:.2f}%", m.test_loss,
                                                           100 * m.test_accuracy);
  spdlog::info(
      "epoch {} done: train loss {:.4f} acc {:.2f}%, test {}, {:.1f} img/s, bottleneck: {}",
      m.epoch, m.train_loss, 100 * m.train_accuracy, test, m.images_per_s,
      main_bottleneck(m.phase_shares, m.gpu_util_mean));
  if (!metrics_.is_open()) return;
  const nlohmann::json j = {{"epoch", m.epoch},
                            {"step", m.step},
                            {"train_loss", m.train_loss},
                            {"train_accuracy", m.train_accuracy},
                            {"test_loss", m.test_loss},
                            {"test_accuracy", m.test_accuracy},
                            {"lr", m.lr},
                            {"epoch_time_s", m.epoch_time_s},
                            {"images_per_s", m.images_per_s},
                            {"phase_shares", phases_json(m.phase_shares)},
                            {"gpu_util_mean", percent_or_null(m.gpu_util_mean)},
                            {"gpu_util_min", percent_or_null(m.gpu_util_min)},
                            {"gpus", gpus_json(m.gpus)}};
  write_metrics(json_text(j) + "\n");
}

void RunReport::run_done(const TrainResult& r) {
  if (!root_) return;
  metrics_.close();
  const PhaseTimes shares = phase_shares(r.phase_totals);
  const double tflops = achieved_tflops(r);
  const double mfu = r.peak_tflops > 0 ? tflops / r.peak_tflops : -1;
  const std::vector<GpuUse> gpus = run_gpus(r.epochs);
  const GpuUse all = all_devices(gpus);
  if (config_.profile != ProfileMode::off)
    spdlog::info("where the time went (mean over ranks, {} steps):\n{}", r.steps_run,
                 format_phase_table(r.phase_totals, r.steps_run));
  spdlog::info(
      "summary: {} steps{} in {}, {:.1f} img/s, {:.3f} TFLOP/s achieved{}, GPU utilisation {}{}, "
      "bottleneck: {}, final test accuracy {}",
      r.steps_run,
      r.steps_run < r.steps
          ? fmt::format(" (resumed at {}, now at {})", r.steps - r.steps_run, r.steps)
          : "",
      format_duration(r.train_time_s), r.images_per_s, tflops,
      mfu >= 0 ? fmt::format(" (MFU {:.1f}%)", 100 * mfu) : "",
      all.util_mean >= 0 ? fmt::format("{:.1f}%", all.util_mean) : "not measured",
      per_gpu_text(gpus),
      config_.profile == ProfileMode::off ? "unknown (--profile off)"
                                          : main_bottleneck(shares, all.util_mean),
      !config_.evaluate ? std::string("not evaluated")
                        : fmt::format("{:.2f}%", 100 * r.epochs.back().test_accuracy));
  spdlog::info("ran: ringtrain {} on host {} ({}), devices: {}", RINGTRAIN_VERSION, host_name(),
               cpu_model(), join(r.devices, ", "));
  if (config_.summary_path.empty()) return;
  double epoch_time = 0;
  for (const EpochMetrics& m : r.epochs) epoch_time += m.epoch_time_s;
  nlohmann::json j = {
      {"mode", to_string(config_.mode)},
      {"device", r.device},
      {"ranks", r.ranks},
      {"workers", config_.workers},
      {"steps", r.steps},
      {"steps_run", r.steps_run},
      {"global_batch", global_batch_},
      {"train_time_s", r.train_time_s},
      {"epoch_time_s", epoch_time / std::max<size_t>(1, r.epochs.size())},
      {"images_per_s", r.images_per_s},
      {"achieved_tflops", tflops},
      {"peak_tflops", r.peak_tflops > 0 ? nlohmann::json(r.peak_tflops) : nlohmann::json()},
      {"mfu", mfu >= 0 ? nlohmann::json(mfu) : nlohmann::json()},
      {"phase_totals_s", phases_json(r.phase_totals)},
      {"phase_shares", phases_json(shares)},
      {"busy_share", busy_share(shares)},
      {"gpu_util_mean", percent_or_null(all.util_mean)},
      {"gpu_util_min", percent_or_null(all.util_min)},
      {"gpus", gpus_json(gpus)},
      {"bottleneck", main_bottleneck(shares, all.util_mean)},
      {"test_accuracy", r.epochs.back().test_accuracy},
      {"final_loss",
       r.step_losses.empty() ? nlohmann::json() : nlohmann::json(r.step_losses.back())}};
  j.update(provenance(config_, r));
  try {
    write_text_file(config_.summary_path, json_text(j, 2) + "\n", "--summary");
  } catch (const UnreadStreamError& e) {
    spdlog::warn("{}; the summary is not written", e.what());
  }
}

}  // namespace ringtrain
