#include "ringtrain/run/trainer.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <thread>

#include "ringtrain/checkpoint/stop_signal.hpp"
#include "ringtrain/core/clock.hpp"
#include "ringtrain/core/host.hpp"
#include "ringtrain/prof/chrome_trace.hpp"
#include "ringtrain/prof/report.hpp"
#include "ringtrain/run/session.hpp"
#include "ringtrain/run/step.hpp"

namespace ringtrain {
namespace {

// Tests: --debug-fail-rank throws and --debug-hang-rank sleeps for ever (a stuck peer) at their
// step.
void inject_faults(const TrainConfig& c, int rank, int64_t step) {
  RT_CHECK(!(rank == c.debug_fail_rank && step == c.debug_fail_step),
           "train: failure injected by --debug-fail-rank at step ", step);
  if (rank != c.debug_hang_rank || step != c.debug_hang_step) return;
  spdlog::warn("rank {}: hanging at step {} (--debug-hang-rank)", rank, step);
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

// The training losses on their way from the device (Ops::record_loss). They are read only when
// a progress line is due, before a checkpoint is written and when an epoch ends: each is then
// checked (a non-finite loss ends the run, naming its step) and added to the epoch's tally and
// the run's per-step losses.
struct LossBook {
  TrainSession& s;
  TrainResult& result;
  EpochTally tally;       // the epoch running
  int64_t next_step = 0;  // the step after the last one run
  BatchResult last;       // the last step's, once read

  void read() {
    const std::vector<BatchResult> steps = take_step_losses(s);
    int64_t step = next_step - static_cast<int64_t>(steps.size());
    for (const BatchResult& r : steps) {
      check_finite(s, r.loss, "the loss at step", step++);
      result.step_losses.push_back(r.loss);
      tally.loss += r.loss;
      tally.correct += static_cast<double>(r.correct);
      last = r;
    }
  }
};

// Where the run stands after step `step` (counted from 1) of `epoch`, which was its b-th step
// (from 0).
RunPosition position_after(const TrainSession& s, int64_t step, int64_t epoch, int64_t b) {
  const bool epoch_done = b + 1 == s.length.steps_per_epoch;
  return {step, epoch_done ? epoch + 1 : epoch, epoch_done ? 0 : (b + 1) * s.config.accum_steps};
}

// The test loss and accuracy of rank 0's model, over the whole test split.
void evaluate_epoch(TrainSession& s, EpochMetrics& m) {
  m.test_loss = m.test_accuracy = std::nan("");
  if (!s.config.evaluate) return;
  // Ranks saw different batches, so their BN running statistics differ: evaluate rank 0's.
  s.strategy->share_buffers();
  EvalSums ev = evaluate(s);
  s.comm.all_reduce_host(&ev.loss, 3, ReduceOp::sum);
  RT_CHECK(ev.count == s.data.test.count, "evaluate: ranks saw ", ev.count,
           " test samples, expected ", s.data.test.count);
  m.test_loss = s.config.debug_eval_nan ? std::nan("") : ev.loss / ev.count;
  check_finite(s, m.test_loss, "the test loss after epoch", m.epoch);
  m.test_accuracy = ev.correct / ev.count;
}

// The epoch's metrics from every rank's tally, then the evaluation.
EpochMetrics finish_epoch(TrainSession& s, const EpochTally& t, double seconds) {
  // One collective for the epoch: loss, correct, images, then the seconds of each phase.
  const PhaseTimes now = s.profiler->totals();
  std::array<double, 3 + kPhases> sums = {t.loss, t.correct, t.images};
  for (int p = 0; p < kPhases; ++p) sums[3 + p] = now[p] - t.phases[p];
  s.comm.all_reduce_host(sums.data(), static_cast<int>(sums.size()), ReduceOp::sum);
  PhaseTimes phases{};
  std::copy(sums.begin() + 3, sums.end(), phases.begin());
  EpochMetrics m;
  m.train_loss = sums[0] / s.world.size() / std::max<int64_t>(1, t.steps);
  m.train_accuracy = sums[1] / std::max(1.0, sums[2]);
  m.epoch_time_s = seconds;
  m.images_per_s = sums[2] / seconds;
  m.phase_shares = phase_shares(phases);
  m.gpus = s.gpu_monitor->take();
  const GpuUse all = all_devices(m.gpus);
  m.gpu_util_mean = all.util_mean;
  m.gpu_util_min = all.util_min;
  return m;
}

// The steps of one epoch from `at`; false when a stop signal ended the run in it.
bool run_epoch(TrainSession& s, int64_t epoch, RunPosition& at, LossBook& losses,
               TrainResult& result) {
  const int64_t skipped = epoch == at.epoch ? at.batch_in_epoch : 0;
  s.train_batches->start_epoch(epoch);
  if (s.graph) s.graph->reset();   // a resumed run or a new epoch captures anew
  s.train_batches->skip(skipped);  // resumed in the middle of this epoch
  const auto start = Clock::now();
  EpochTally& tally = losses.tally;
  tally = EpochTally{};
  tally.phases = s.profiler->totals();
  double lr = 0;
  for (int64_t b = skipped / s.config.accum_steps;
       b < s.length.steps_per_epoch && at.step < s.length.total_steps; ++b) {
    inject_faults(s.config, s.world.rank(), at.step);
    lr = s.schedule.at(at.step);
    train_step(s, lr, at.step);
    s.profiler->start(Phase::other);
    losses.next_step = at.step + 1;
    tally.images += static_cast<double>(int64_t{s.config.batch_size} * s.config.accum_steps);
    ++tally.steps;
    if (s.report->progress_due(at.step)) {
      losses.read();
      s.report->progress(epoch, at.step, losses.last.loss, lr);
    }
    s.profiler->end_step();
    at = position_after(s, at.step + 1, epoch, b);
    if (s.checkpoint_after_step(at)) return false;
  }
  losses.read();
  EpochMetrics m = finish_epoch(s, tally, seconds_since(start));
  m.epoch = epoch + 1;
  m.step = at.step;
  m.lr = lr;
  if (s.graph) s.graph->reset();  // evaluation sizes the activations anew: no graph may outlive it
  evaluate_epoch(s, m);
  s.report->epoch_done(m);
  result.epochs.push_back(m);
  return true;
}

// This rank's Chrome trace, on the job's clock: rank 0's profiler start is time 0 (collective).
// Note: the host row is there on the CPU too, where it repeats the device row's durations: the
// device row lays the steps end to end, and only the host row shares its clock with the
// all-reduce and loader rows.
void write_trace(TrainSession& s) {
  TraceClock clock;
  clock.zero_unix_s = s.world.is_root() ? s.profiler->origin_unix_s() : 0;
  s.comm.all_reduce_host(&clock.zero_unix_s, 1, ReduceOp::sum);  // rank 0's, on every rank
  clock.offset_s = s.profiler->origin_unix_s() - clock.zero_unix_s;
  TraceRows rows;
  rows.phases = s.profiler->events();
  rows.device_label = s.backend().description();
  rows.host_row = true;
  rows.all_reduces = s.strategy->traced_communication();
  rows.loader = s.train_source.batches->batch_lanes();
  write_chrome_trace(
      str_cat(s.config.trace_dir, "/trace_rank", s.world.rank(), ".json"), rows, s.world.rank(),
      str_cat("rank ", s.world.rank(), " on ", host_name(), " (", rows.device_label, ")"), clock);
}

// The run's totals, its report, and its trace.
void finish_run(TrainSession& s, TrainResult& result) {
  for (const auto& m : result.epochs) result.train_time_s += m.epoch_time_s;
  result.images_per_s =
      static_cast<double>(result.steps_run) * s.length.global_batch / result.train_time_s;
  result.achieved_gflops = achieved_tflops(result) * 1e3;
  result.phase_totals = s.profiler->totals();
  s.comm.all_reduce_host(result.phase_totals.data(), kPhases, ReduceOp::average);
  result.ranks = s.world.size();
  result.peak_tflops =
      s.config.peak_tflops > 0 ? s.config.peak_tflops : peak_tflops(s.backend().name());
  s.report->run_done(result);
  if (s.profiler->mode() == ProfileMode::trace) write_trace(s);
}

}  // namespace

TrainResult train(const TrainConfig& config) {
  install_stop_signal_handlers();  // before the long start-up (the CLI did it before MPI_Init)
  TrainSession s(config);
  TrainResult result;
  LossBook losses{s, result, EpochTally{}, 0, BatchResult{}};
  s.checkpoints->set_before_save([&losses] { losses.read(); });
  result.parameters = s.model().parameter_count();
  result.macs_per_image = s.model().macs_per_image(s.data.train.height, s.data.train.width);
  result.device = s.device_name();
  result.devices = s.device_names();
  RunPosition at = s.resume();
  const int64_t start_step = at.step;
  s.report->begin(start_step, start_step > 0 ? s.checkpoints->last_written() : "");
  result.stopped = s.stop_before_start(at);
  for (int64_t epoch = at.epoch; epoch < s.length.epochs && !result.stopped; ++epoch)
    result.stopped = !run_epoch(s, epoch, at, losses, result);
  if (!result.stopped) s.checkpoint_at_end(at);
  result.checkpoint = s.checkpoints->last_written();
  result.steps = at.step;
  result.steps_run = at.step - start_step;
  if (!result.epochs.empty()) finish_run(s, result);  // empty: stopped in the first epoch run
  return result;
}

}  // namespace ringtrain
