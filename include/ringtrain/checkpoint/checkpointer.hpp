#pragma once
#include <chrono>
#include <functional>
#include <string>

#include "ringtrain/checkpoint/checkpoint.hpp"
#include "ringtrain/checkpoint/checkpoint_folder.hpp"
#include "ringtrain/distributed/communicator.hpp"
#include "ringtrain/optim/loss_scaler.hpp"
#include "ringtrain/run_config/config.hpp"

namespace ringtrain {

// Where a run stands between two steps.
struct RunPosition {
  int64_t step = 0;            // optimizer steps done
  int64_t epoch = 0;           // the epoch of the next step
  int64_t batch_in_epoch = 0;  // micro-batches of that epoch already consumed
};

// The checkpoints of a run: --resume at the start; then, at every step boundary, a checkpoint
// when --checkpoint-every steps or --checkpoint-minutes have passed, or when SIGTERM or SIGUSR1
// (what Slurm sends before a time limit; see stop_signal.hpp) reached any rank, in which case
// every rank stops there. Decisions are all-reduced, so all ranks take them together; rank 0
// writes.
class Checkpointer {
 public:
  // `identity`: the model, data, seed, optimizer and batch recipe of this run; `last_step`: the
  // step it ends at. The signals reach it through install_stop_signal_handlers(), which train()
  // calls first.
  Checkpointer(const TrainConfig& config, Communicator& comm, CheckpointMeta identity,
               int64_t last_step);
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // Loads the checkpoint --resume names (the newest complete one whose checksums match for
  // "auto"; a torn or corrupt one is skipped with a warning naming it and the dataset; a named
  // one that is corrupt is refused) into the parameters, optimizer state and loss scaler; returns
  // where to continue (the start when there is nothing to resume). Throws when the checkpoint
  // belongs to another model, data (by content), seed, or its position in the epoch cannot be
  // continued exactly under this run's batch recipe (resume_position), unless --resume-force.
  // Then (rank 0) refuses to start when another run's checkpoint stands at a step this run may
  // write.
  RunPosition resume(Backend& backend, ParameterSet& params, Optimizer& optimizer,
                     LossScaler& scaler);

  // Before the first step (collective): a stop signal that arrived during start-up ends the
  // run here. Returns true when it must stop: the run's position is then in a checkpoint (the
  // one it resumed from, or a new one).
  bool before_start(const RunPosition& start, Backend& backend, const ParameterSet& params,
                    const Optimizer& optimizer, const LossScaler& scaler);
  // After a step (collective). Returns true when the run must stop: a checkpoint has then been
  // written.
  bool after_step(const RunPosition& next, Backend& backend, const ParameterSet& params,
                  const Optimizer& optimizer, const LossScaler& scaler);
  // At the end of the run: the final checkpoint (unless --no-final-checkpoint, or the last step's
  // is already written).
  void at_end(const RunPosition& end, Backend& backend, const ParameterSet& params,
              const Optimizer& optimizer, const LossScaler& scaler);

  const std::string& last_written() const { return last_written_; }
  // Runs before every checkpoint is written: the trainer reads and checks the losses of the
  // steps before it there, so that a diverged model never becomes the newest checkpoint.
  void set_before_save(std::function<void()> hook) { before_save_ = std::move(hook); }

 private:
  // The file --resume names after verifying it (throws naming the corrupt dataset), or for
  // "auto" the newest good checkpoint ("" when none).
  std::string checkpoint_to_resume() const;
  RunPosition load(Backend& backend, ParameterSet& params, Optimizer& optimizer,
                   LossScaler& scaler);
  // Rank 0, before `path` is written: a diverged state (one no run could resume from) ends the
  // run as diverged, keeping the newest loadable checkpoint; another run's file is not replaced.
  void check_before_writing(const std::string& path, int64_t step, Backend& backend,
                            const ParameterSet& params, const Optimizer& optimizer);
  void save(const RunPosition& at, Backend& backend, const ParameterSet& params,
            const Optimizer& optimizer, const LossScaler& scaler);
  void write_and_verify(const std::string& path, Backend& backend, const ParameterSet& params,
                        const Optimizer& optimizer, const CheckpointMeta& meta);
  // Records the signal and logs the stop (rank 0); `when`: where the run stopped.
  void report_stop(const std::string& when);

  const TrainConfig& config_;
  Communicator& comm_;
  CheckpointMeta identity_;
  int64_t last_step_;
  CheckpointRotation rotation_;  // rank 0's
  std::chrono::steady_clock::time_point last_save_;
  std::string last_written_;
  std::function<void()> before_save_;
};

}  // namespace ringtrain
