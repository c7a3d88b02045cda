#pragma once
#include <string>

#include "ringtrain/nn/parameters.hpp"

namespace ringtrain {

// Where a run stands and what it is, beside the tensors of a checkpoint.
struct CheckpointMeta {
  int64_t step = 0;            // optimizer steps done
  int64_t epoch = 0;           // the epoch of the next step
  int64_t batch_in_epoch = 0;  // micro-batches of that epoch each rank has consumed
  int world_size = 1;
  int64_t global_batch = 0;
  double loss_scale = 1;
  int loss_scale_clean_steps = 0;
  std::string model;    // identifies the architecture: a checkpoint of another is refused
  std::string data;     // identifies the data file
  std::string config;   // the run's settings, for the record
  std::string version;  // of ringtrain
};

// A checkpoint in HDF5: /params/NAME, /momentum/NAME (NCHW, whatever the backend's layout),
// /buffers/NAME and the meta as attributes of /. Written to PATH.tmp, fsynced and renamed, so
// a crash never leaves a torn checkpoint under a checkpoint's name.
void write_checkpoint(const std::string& path, Backend& backend, const ParameterSet& params,
                      const Tensor& momentum, const CheckpointMeta& meta);

// The meta of a checkpoint: throws an Error naming the file when it cannot be opened (torn,
// truncated, not HDF5) or lacks the meta. load_checkpoint checks every tensor's size.
CheckpointMeta read_checkpoint_meta(const std::string& path);

// The parameters (also refreshing their compute copy), momentum and buffers of a checkpoint.
void load_checkpoint(const std::string& path, Backend& backend, ParameterSet& params,
                     Tensor& momentum);

// DIR/ckpt-step00001234.h5
std::string checkpoint_path(const std::string& dir, int64_t step);

// The newest checkpoint of `dir` that reads back whole, or "" when there is none; the ones
// skipped on the way are returned in `skipped` with the reason.
std::string newest_checkpoint(const std::string& dir, std::vector<std::string>* skipped);

// Removes all but the newest `keep` checkpoints of `dir`.
void prune_checkpoints(const std::string& dir, int keep);

// Why a saved checkpoint cannot continue this run ("" when it can): another model, data file
// or world size.
std::string checkpoint_mismatch(const CheckpointMeta& saved, const CheckpointMeta& now);

}  // namespace ringtrain
