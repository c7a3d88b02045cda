#pragma once
#include <string>

#include "ringtrain/checkpoint/checkpoint.hpp"

namespace ringtrain {

// Why a saved checkpoint cannot continue this run ("" when it can): another model, other data
// (by content fingerprint) or another seed (which orders every epoch's samples otherwise).
std::string checkpoint_mismatch(const CheckpointMeta& saved, const CheckpointMeta& now);

// Why a saved checkpoint is another run's ("" when it is this run's): checkpoint_mismatch, or
// another optimizer (whose state this run cannot continue).
std::string run_mismatch(const CheckpointMeta& saved, const CheckpointMeta& now);

// CheckpointMeta::sample_order of a run whose train images are streamed in windows of
// `window_images` (0: held in memory, one permutation of the whole split per epoch).
std::string describe_sample_order(int64_t window_images);

// Where this run continues within the checkpoint's epoch.
struct ResumePosition {
  int64_t batch_in_epoch = 0;  // micro-batches of the epoch each rank skips
  int64_t samples = 0;         // samples of the epoch they cover, all ranks together
  bool exact = true;           // false: the next unseen sample cannot be reached exactly
  std::string problem;         // when not exact: why, and what to do
};

// Every epoch's order is one permutation of the split, drawn from (seed, epoch), sharded by
// rank after it: micro-batch i of rank r takes positions [i*b, (i+1)*b) of the rank's every
// world-th sample, so after i batches the ranks together have consumed exactly the first
// i*b*world samples of the permutation, whatever b and world are. A checkpoint's
// samples_in_epoch therefore continues exactly under any recipe whose global batch divides it.
// Streamed windows are sharded per window, which depends on the recipe: there only the same
// recipe is exact. When not exact, the position is the last whole global batch before the
// checkpoint's (samples seen again), for --resume-force.
ResumePosition resume_position(const CheckpointMeta& saved, const CheckpointMeta& now);

}  // namespace ringtrain
