#include "ringtrain/checkpoint/checkpointer.hpp"

#include <spdlog/spdlog.h>

#include <cstdio>

#include "ringtrain/checkpoint/checkpoint_folder.hpp"
#include "ringtrain/checkpoint/resume_position.hpp"
#include "ringtrain/checkpoint/stop_signal.hpp"
#include "ringtrain/core/clock.hpp"

namespace ringtrain {

Checkpointer::Checkpointer(const TrainConfig& config, Communicator& comm, CheckpointMeta identity,
                           int64_t last_step)
    : config_(config),
      comm_(comm),
      identity_(std::move(identity)),
      last_step_(last_step),
      rotation_(config.checkpoint_dir, config.keep_checkpoints, identity_),
      last_save_(Clock::now()) {}

RunPosition Checkpointer::resume(Backend& backend, ParameterSet& params, Optimizer& optimizer,
                                 LossScaler& scaler) {
  const RunPosition start = load(backend, params, optimizer, scaler);
  if (comm_.rank() == 0)
    rotation_.refuse_steps_of_other_runs(start.step, last_step_, last_written_);
  return start;
}

RunPosition Checkpointer::load(Backend& backend, ParameterSet& params, Optimizer& optimizer,
                               LossScaler& scaler) {
  if (config_.resume == ResumeFrom::none) return {};
  const std::string path = checkpoint_to_resume();
  if (path.empty()) return {};
  const CheckpointMeta saved = read_checkpoint_meta(path);
  const std::string mismatch = checkpoint_mismatch(saved, identity_);
  RT_CHECK(mismatch.empty() || config_.resume_force, "resume: refusing ", path, ": ", mismatch,
           " (--resume-force to use it anyway)");
  if (!mismatch.empty()) spdlog::warn("resume: {} although {}", path, mismatch);
  if (saved.data != identity_.data && saved.data_fingerprint == identity_.data_fingerprint)
    spdlog::info("resume: same data content (fingerprint {}) as the checkpoint's {}; now {}",
                 saved.data_fingerprint, saved.data, identity_.data);
  const ResumePosition at = resume_position(saved, identity_);
  RT_CHECK(at.exact || config_.resume_force, "resume: refusing ", path, ": ", at.problem);
  if (!at.exact) spdlog::warn("resume: --resume-force although {}", at.problem);
  load_checkpoint(path, backend, params, &optimizer);
  scaler.restore(saved.loss_scale, saved.loss_scale_clean_steps);
  spdlog::info(
      "resumed from {}: step {}, epoch {}, {} samples into it ({} batches of {} per rank on {} "
      "ranks)",
      path, saved.step, saved.epoch + 1, at.samples, at.batch_in_epoch, identity_.batch_per_rank,
      identity_.world_size);
  last_written_ = path;
  if (mismatch.empty()) rotation_.trust(path);
  return {saved.step, saved.epoch, at.batch_in_epoch};
}

std::string Checkpointer::checkpoint_to_resume() const {
  if (config_.resume == ResumeFrom::file) {
    try {
      verify_checkpoint(config_.resume_file);
    } catch (const Error& e) {
      throw Error(str_cat("resume: refusing ", config_.resume_file, ": ", e.what(),
                          "; name another checkpoint, or --resume auto for the newest good one"));
    }
    return config_.resume_file;
  }
  std::vector<std::string> skipped;
  const std::string path = newest_checkpoint(config_.checkpoint_dir, &skipped);
  for (const std::string& why : skipped) spdlog::warn("--resume auto: skipped {}", why);
  if (path.empty())
    spdlog::info("--resume auto: no checkpoint in {}: starting from the beginning",
                 config_.checkpoint_dir);
  return path;
}

bool Checkpointer::before_start(const RunPosition& start, Backend& backend,
                                const ParameterSet& params, const Optimizer& optimizer,
                                const LossScaler& scaler) {
  double vote = stop_signal_received() != 0 ? 1.0 : 0.0;
  comm_.all_reduce_host(&vote, 1, ReduceOp::sum);
  if (vote == 0) return false;
  // Note: a resumed run stopped here is already at its checkpoint; a fresh one saves step 0.
  if (last_written_ != checkpoint_path(config_.checkpoint_dir, start.step))
    save(start, backend, params, optimizer, scaler);
  report_stop(str_cat("during start-up, before step ", start.step));
  return true;
}

bool Checkpointer::after_step(const RunPosition& next, Backend& backend, const ParameterSet& params,
                              const Optimizer& optimizer, const LossScaler& scaler) {
  const bool on_clock = config_.checkpoint_minutes > 0 &&
                        std::chrono::duration<double>(Clock::now() - last_save_).count() >=
                            60 * config_.checkpoint_minutes;
  // Any rank's signal stops every rank; rank 0's clock decides the timed checkpoints.
  double votes[2] = {stop_signal_received() != 0 ? 1.0 : 0.0,
                     comm_.rank() == 0 && on_clock ? 1.0 : 0.0};
  comm_.all_reduce_host(votes, 2, ReduceOp::sum);
  const bool stop = votes[0] > 0;
  const bool due =
      (config_.checkpoint_every > 0 && next.step % config_.checkpoint_every == 0) || votes[1] > 0;
  if (stop || due) save(next, backend, params, optimizer, scaler);
  if (stop) report_stop(str_cat("after step ", next.step));
  return stop;
}

void Checkpointer::report_stop(const std::string& when) {
  if (comm_.rank() != 0) return;
  const int signal = stop_signal_received();
  const int count = stop_signals_received();
  spdlog::warn("{} received{}: stopped {} with checkpoint {}; continue with --resume auto",
               signal != 0 ? stop_signal_name(signal) : "a stop signal on another rank",
               count > 1 ? str_cat(" (", count, " stop signals, one stop)") : std::string(), when,
               last_written_);
}

void Checkpointer::at_end(const RunPosition& end, Backend& backend, const ParameterSet& params,
                          const Optimizer& optimizer, const LossScaler& scaler) {
  if (config_.final_checkpoint &&
      last_written_ != checkpoint_path(config_.checkpoint_dir, end.step))
    save(end, backend, params, optimizer, scaler);
}

void Checkpointer::save(const RunPosition& at, Backend& backend, const ParameterSet& params,
                        const Optimizer& optimizer, const LossScaler& scaler) {
  if (before_save_) before_save_();
  CheckpointMeta meta = identity_;
  meta.step = at.step;
  meta.epoch = at.epoch;
  meta.samples_in_epoch = at.batch_in_epoch * identity_.batch_per_rank * identity_.world_size;
  meta.loss_scale = scaler.scale();
  meta.loss_scale_clean_steps = scaler.clean_steps();
  meta.optimizer = to_string(optimizer.kind());
  meta.optimizer_steps = optimizer.steps();
  const std::string path = checkpoint_path(config_.checkpoint_dir, at.step);
  if (comm_.rank() == 0) {
    check_before_writing(path, at.step, backend, params, optimizer);
    write_and_verify(path, backend, params, optimizer, meta);
  }
  comm_.barrier();  // no rank goes on (or exits) before the file is in place
  last_written_ = path;
  last_save_ = Clock::now();
}

void Checkpointer::check_before_writing(const std::string& path, int64_t step, Backend& backend,
                                        const ParameterSet& params, const Optimizer& optimizer) {
  const std::string problem = unloadable_state(backend, params, optimizer.state());
  if (!problem.empty())
    throw DivergedError(
        str_cat("train: diverged: at step ", step, " the model's ", problem,
                ", which no run can resume from: checkpoint ", path, " not written; ",
                last_written_.empty() ? std::string("this run has no earlier checkpoint")
                                      : str_cat("the newest loadable one is ", last_written_,
                                                " (--resume auto continues from it)"),
                "; likely --lr ", config_.lr, " is too high (lower it or add --warmup-steps)"));
  rotation_.refuse_to_replace(path);
}

// Rank 0's part of save(): the file written (with a progress line every --log-interval seconds
// while it is), read back whole, and only then the older checkpoints pruned.
void Checkpointer::write_and_verify(const std::string& path, Backend& backend,
                                    const ParameterSet& params, const Optimizer& optimizer,
                                    const CheckpointMeta& meta) {
  const auto start = Clock::now();
  auto last_line = start;
  std::size_t bytes = 0;
  const auto progress = [&](std::size_t done, std::size_t total) {
    bytes = total;
    if (done == total || seconds_since(last_line) < config_.log_interval_s) return;
    last_line = Clock::now();
    spdlog::info("checkpoint {}: {:.0f} of {:.0f} MiB written ({:.1f} s)", path, done / 1048576.0,
                 total / 1048576.0, seconds_since(start));
  };
  write_checkpoint(path, backend, params, optimizer.state(), meta, progress);
  const double written_s = seconds_since(start);
  try {
    verify_checkpoint(path);
  } catch (const Error& e) {
    std::remove(path.c_str());
    throw Error(str_cat("checkpoint ", path, " did not read back after writing (", e.what(),
                        "): removed it, the older checkpoints are kept"));
  }
  rotation_.trust(path);
  rotation_.prune(path);
  spdlog::info("checkpoint {} ({:.0f} MiB, written in {:.1f} s, read back in {:.1f} s)", path,
               bytes / 1048576.0, written_s, seconds_since(start) - written_s);
}

}  // namespace ringtrain
