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

// At start-up, before any training: creates `dir` when missing, checks that a file can be
// written there (throws naming the folder and the system's reason), and removes the
// checkpoint temporaries (ckpt-stepNNNNNNNN.h5.tmp-XXXXXX, or .h5.tmp from earlier versions) a
// crashed run left. Returns their paths.
std::vector<std::string> prepare_checkpoint_dir(const std::string& dir);

// --keep N, applied by rank 0 after each checkpoint is written and read back.
//
// Note: a file under a checkpoint's name in the folder is one of four kinds, and only the
// first counts toward N:
//  - good: it verifies, and its model, data and seed are this run's;
//  - corrupt (torn, or a checksum that does not match): renamed to NAME.corrupt with a warning,
//    so that its step never outranks the good ones and --resume auto never reads it again;
//  - another run's (another model, data, seed or checkpoint format): never removed, never
//    counted: it is somebody's work, and not this run's to rotate;
//  - not a regular file (a FIFO, a folder): never opened, never removed.
// The folder keeps the N newest good checkpoints by step and, always, the one just written.
// Each file is verified once per run (this run's own, written and read back, not at all).
class CheckpointRotation {
 public:
  CheckpointRotation(std::string dir, int keep, CheckpointMeta identity);
  // `path` is good: this run wrote it and read it back, or resumed from it.
  void trust(const std::string& path);
  // The rotation, after `written` has been written and read back (and trusted).
  void prune(const std::string& written);

 private:
  enum class Kind { good, corrupt, foreign, not_a_file };
  struct Known {
    Kind kind;
    off_t size;
    int64_t mtime_ns;  // a file replaced since it was classified is classified again
  };
  Kind classify(const std::string& path);
  void move_aside(const std::string& path, const std::string& why);
  void remove(const std::string& path);

  std::string dir_;
  int keep_;
  CheckpointMeta identity_;
  std::map<std::string, Known> known_;
};

}  // namespace ringtrain
