#pragma once
// The checkpoints of a run's folder: their names, the newest good one, the clean-up at
// start-up, and the rotation --keep applies.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ringtrain/checkpoint/checkpoint.hpp"

namespace ringtrain {

// DIR/ckpt-step00001234.h5
std::string checkpoint_path(const std::string& dir, int64_t step);

// The newest checkpoint of `dir` that reads back whole with matching checksums, or "" when
// there is none; the ones skipped on the way are returned in `skipped` with the reason.
std::string newest_checkpoint(const std::string& dir, std::vector<std::string>* skipped);

// One run's claim on its --checkpoint-dir, held while the run lives.
//
// Note: two runs writing into one folder replace each other's checkpoints of the same step and
// rotate each other's files away, so a run claims the folder before it touches it: an exclusive
// flock on DIR/.ringtrain-run.lock, which the system drops when the process ends, however it
// ends (a killed run leaves no stale claim). The file says who holds it, for the refusal's
// message; it is never removed (removing a lock file races with the next claimant). On a file
// system without flock the claim is skipped with a warning.
class CheckpointFolderClaim {
 public:
  CheckpointFolderClaim() = default;  // no claim (the ranks that do not write checkpoints)
  // Claims `dir` for the run `holder` describes; throws a ConfigError naming the run that holds
  // it and --checkpoint-dir when another live process does.
  CheckpointFolderClaim(const std::string& dir, const std::string& holder);
  ~CheckpointFolderClaim();
  CheckpointFolderClaim(CheckpointFolderClaim&& other) noexcept;
  CheckpointFolderClaim& operator=(CheckpointFolderClaim&& other) noexcept;

 private:
  int fd_ = -1;
};

// A checkpoint folder made ready for a run.
struct CheckpointFolder {
  CheckpointFolderClaim claim;
  std::vector<std::string> removed;  // temporaries an interrupted checkpoint left
};

// At start-up, before any training: creates `dir` when missing, checks that a file can be
// written there (throws naming the folder and the system's reason), claims it for the run
// `holder` describes, and removes the checkpoint temporaries (ckpt-stepNNNNNNNN.h5.tmp-XXXXXX,
// or .h5.tmp from earlier versions) an interrupted run left: only those no live process holds
// (TemporaryFile locks the file it writes).
CheckpointFolder prepare_checkpoint_dir(const std::string& dir, const std::string& holder);

// --keep N, applied by rank 0 after each checkpoint is written and read back.
//
// Note: a file under a checkpoint's name in the folder is one of five kinds, and only the
// first counts toward N:
//  - good: it verifies and loads, and its model, data, seed and optimizer are this run's;
//  - unloadable: this run's, every checksum matches, but it cannot be resumed (an infinite
//    running variance of a run that was diverging): never counted, so it never displaces a
//    loadable one, and replaced when this run writes its step again;
//  - corrupt (torn, or a checksum that does not match): renamed to NAME.corrupt with a warning,
//    so that its step never outranks the good ones and --resume auto never reads it again;
//  - another run's (another model, data, seed, optimizer or checkpoint format): never removed,
//    never counted, never replaced: it is somebody's work, and not this run's to rotate;
//  - not a regular file (a FIFO, a folder): never opened, never removed.
// The folder keeps the N newest good checkpoints by step and, always, the one just written.
// Each file is verified once per run (this run's own, written and read back, not at all).
class CheckpointRotation {
 public:
  CheckpointRotation(std::string dir, int keep, CheckpointMeta identity);
  // `path` is good: this run wrote it and read it back, or resumed from it.
  void trust(const std::string& path);
  // At start-up: throws a ConfigError naming the file, its run and --checkpoint-dir when another
  // run's checkpoint stands at a step in [first, last], where this run may write, other than
  // `resumed`.
  void refuse_steps_of_other_runs(int64_t first, int64_t last, const std::string& resumed);
  // Before `path` is written: throws naming it when it holds another run's checkpoint.
  void refuse_to_replace(const std::string& path);
  // The rotation, after `written` has been written and read back (and trusted).
  void prune(const std::string& written);

 private:
  enum class Kind { good, unloadable, corrupt, foreign, not_a_file };
  struct Known {
    Kind kind;
    off_t size;
    int64_t mtime_ns;  // a file replaced since it was classified is classified again
    std::string why;   // for another run's: what differs
  };
  const Known& classify(const std::string& path);
  // What the regular file `path` is; `now` holds its size and modification time.
  Known examine(const std::string& path, Known now);
  void move_aside(const std::string& path, const std::string& why);
  void remove(const std::string& path);

  std::string dir_;
  int keep_;
  CheckpointMeta identity_;
  std::map<std::string, Known> known_;
};

}  // namespace ringtrain
