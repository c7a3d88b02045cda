#pragma once
#include <chrono>
#include <string>

#include "ringtrain/core/output_file.hpp"
#include "ringtrain/report/metrics.hpp"
#include "ringtrain/run_config/config.hpp"

namespace ringtrain {

// What a run tells its user, from rank 0: progress (one line rewritten in place when a single
// process writes to a terminal; otherwise, under mpirun or Slurm or into a file, a plain line
// every --log-interval seconds, as batch jobs want), a line and a JSON line (--metrics) per epoch,
// and at the end the phase table, images/s, TFLOP/s, MFU and the main bottleneck, plus a summary
// JSON (--summary) that other tools read.
class RunReport {
 public:
  RunReport(const TrainConfig& config, bool root, int world_size, int64_t total_steps,
            int64_t epochs, int64_t global_batch);

  // When the steps start, at `start_step` (> 0 after a resume from `resumed_from`): every rate
  // and mean counts the work of this process only. Opens --metrics: a fresh run replaces it, a
  // resumed one appends a segment marker line and its epochs to it. A FIFO that no process
  // reads is not waited for: a warning, and the run goes on without it.
  void begin(int64_t start_step, const std::string& resumed_from);
  // Whether a progress line is due after step `step` (0-based): on rank 0, every
  // --log-interval seconds (every 0.5 s on a terminal) and after the last step. The trainer
  // reads the losses from the device only when one is.
  bool progress_due(int64_t step);
  // The progress line after step `step`, once progress_due said so.
  void progress(int64_t epoch, int64_t step, double loss, double lr);
  // The evaluation after an epoch, `batch` of rank 0's `batches` done: a line every
  // --log-interval seconds, none for the last batch (the epoch's line follows).
  void evaluation_progress(int64_t batch, int64_t batches);
  void epoch_done(const EpochMetrics& m);
  void run_done(const TrainResult& r);

 private:
  // Whether a progress line is due, `interval` seconds after the last (always when `last`); the
  // line counts as printed from now.
  bool line_due(double interval, bool last);
  // A progress line: rewritten in place on a terminal (ended there when `last`), else logged.
  void print_line(const std::string& line, bool last);
  // Writes `text` to --metrics; a FIFO nobody reads any more ends the metrics with a warning.
  void write_metrics(const std::string& text);
  using Clock = std::chrono::steady_clock;
  const TrainConfig& config_;
  bool root_, terminal_;
  int64_t total_steps_, epochs_, global_batch_, start_step_ = 0;
  Clock::time_point start_, last_line_;
  OutputStream metrics_;
};

// "1m05s", "42s".
std::string format_duration(double seconds);
// Achieved TFLOP/s of a run (one training step = three forward passes, 2 FLOPs per MAC).
double achieved_tflops(const TrainResult& r);

}  // namespace ringtrain
