#pragma once
#include <string>
#include <vector>

#include "ringtrain/core/atomic_file.hpp"
#include "ringtrain/core/error.hpp"
#include "ringtrain/loader/augment.hpp"
#include "ringtrain/nn/parameters.hpp"
#include "ringtrain/nn/resnet.hpp"
#include "ringtrain/optim/optimizer.hpp"

namespace ringtrain {

// A checkpoint whose bytes are damaged: torn, truncated, or a checksum that does not match.
// (Other refusals, such as another format, are plain Errors: the file may be fine.)
class CorruptCheckpoint : public Error {
 public:
  using Error::Error;
};

// A checkpoint whose bytes are whole (every checksum matches) but whose contents no run can
// continue from: a value no training writes (check_loaded_values), an optimizer state tensor
// missing or misshapen, an update count outside [0, step], an optimizer this ringtrain lacks.
class UnloadableCheckpoint : public Error {
 public:
  using Error::Error;
};

// Where a run stands and what it is, beside the tensors of a checkpoint.
struct CheckpointMeta {
  int64_t step = 0;              // optimizer steps done
  int64_t epoch = 0;             // the epoch of the next step
  int64_t samples_in_epoch = 0;  // samples of that epoch consumed, all ranks together
  uint64_t seed = 0;             // --seed: with the epoch, it orders the epoch's samples
  // The global batch recipe the samples were consumed in.
  int64_t batch_per_rank = 0;
  int world_size = 1;
  int accum_steps = 1;
  std::string sample_order;  // how an epoch's samples are ordered (whole split, or windows)
  double loss_scale = 1;
  int loss_scale_clean_steps = 0;
  std::string optimizer = "sgd";  // as --optimizer names it: whose state the checkpoint holds
  int64_t optimizer_steps = 0;    // updates done (fewer than `step` when fp16 skipped some)
  std::string model;              // identifies the architecture: a checkpoint of another is refused
  // The model and its input as values: eval, predict, export and --init-from rebuild the model
  // and prepare images from these alone.
  ResNetConfig model_config;  // depth, stem, width, classes, input channels, zero-init residual
  int image_height = 0, image_width = 0;  // of the train images
  std::vector<std::string> class_names;
  Normalization norm;  // per channel, on the 0-1 scale: what the loader subtracted and divided by
  std::string data;    // the data file's path and shape, for humans
  std::string data_fingerprint;  // identifies the data by content (data_fingerprint())
  std::string config;            // the run's main settings in one line, for humans
  // The run's effective configuration as TOML (every flag of `train`, as `train --config` reads
  // it); empty in checkpoints written before it was stored.
  std::string effective_config;
  std::string version;  // of ringtrain

  int64_t global_batch() const { return batch_per_rank * world_size * accum_steps; }
};

// A checkpoint in HDF5: /params/NAME, /buffers/NAME and the optimizer's state tensors
// /optimizer/STATE/NAME (NCHW, whatever the backend's layout), each with its XXH64 checksum as
// attribute `xxh64`, and the meta as attributes
// of / (with `meta_xxh64` over them; the schema is in docs/ARCHITECTURE.md). Written to PATH.tmp,
// flushed, closed, fsynced and renamed, every result checked, so a crash or a full disk never
// leaves a torn checkpoint under a checkpoint's name.
// `progress` as for write_file_atomically.
void write_checkpoint(const std::string& path, Backend& backend, const ParameterSet& params,
                      const std::vector<OptimizerState>& state, const CheckpointMeta& meta,
                      const WriteProgress& progress = {});

// The meta of a checkpoint: throws an Error naming the file when it cannot be opened (torn,
// truncated, not HDF5), lacks the meta or its checksum does not match.
CheckpointMeta read_checkpoint_meta(const std::string& path);

// Reads the meta and every tensor of a checkpoint and checks their checksums: throws a
// CorruptCheckpoint naming the file and the first dataset that does not match. Then checks that
// a run could resume from it (the same rules as load_checkpoint, without a model: every value,
// the optimizer's name, its state tensors mirroring /params, its update count): throws an
// UnloadableCheckpoint naming the first problem. Returns the meta, and the number of datasets
// checked in `datasets` when given.
CheckpointMeta verify_checkpoint(const std::string& path, int64_t* datasets = nullptr);

// The parameters (also refreshing their compute copy), buffers and, when `optimizer` is given,
// the optimizer's state tensors and update count of a checkpoint (format 3's /momentum as SGD's
// "momentum"),
// each checked against its checksum and for values no training writes (check_loaded_values: a
// NaN, an infinity, a negative running variance; an Error naming the file and the dataset). Before
// anything is loaded, every tensor's name, shape and dtype are checked against the model's: a
// checkpoint of another model is an Error naming the first tensor that differs (as the model names
// it), its shape in the checkpoint and in the model, the model the checkpoint was written by and
// the remedy.
// A checkpoint of another optimizer is an Error naming both and the remedy.
void load_checkpoint(const std::string& path, Backend& backend, ParameterSet& params,
                     Optimizer* optimizer);

// Why the state of a run cannot be written as a checkpoint that loads, or "" when it can: the
// first parameter, buffer or optimizer state tensor holding a value no load accepts
// (loaded_values_problem), read through `backend` one tensor at a time.
std::string unloadable_state(Backend& backend, const ParameterSet& params,
                             const std::vector<OptimizerState>& state);

// Whether `path` is a regular HDF5 file with a checkpoint's layout (a /params group).
bool is_checkpoint(const std::string& path);

// `ringtrain inspect` of a checkpoint: its meta, after verify_checkpoint (throws naming the first
// corrupt dataset, or saying that every checksum matches but no run can resume from it, and why).
std::string inspect_checkpoint(const std::string& path);

}  // namespace ringtrain
