#pragma once
// A trained model as torchvision's ResNet state_dict in a safetensors file (`ringtrain export`),
// and such a file, or a checkpoint, as the start of a new run (`train --init-from`).
#include <map>
#include <string>

#include "ringtrain/checkpoint/checkpoint.hpp"
#include "ringtrain/exchange/safetensors.hpp"

namespace ringtrain {

// The parameters and buffers of `params` under torchvision's names, in its state_dict's order,
// as F32 NCHW (whatever the backend's layout and compute dtype), each batch norm's
// num_batches_tracked (I64) set to `batches_tracked`.
SafeTensors torchvision_state(Backend& backend, const ParameterSet& params,
                              int64_t batches_tracked);

// The safetensors `__metadata__` of a model exported from the checkpoint `source`: depth, width,
// stem, classes, in_channels, image_height, image_width, class_names (a JSON list), norm_mean and
// norm_std (JSON lists, 0-1 scale), ringtrain_version, source_checkpoint, step and format ("pt").
std::map<std::string, std::string> export_metadata(const CheckpointMeta& meta,
                                                   const std::string& source);

// `ringtrain export`: the model of `checkpoint` as a safetensors file at `out`. An existing `out`
// is a ConfigError unless `force`.
void export_checkpoint(const std::string& checkpoint, const std::string& out, bool force);

// What init_from did.
struct InitFrom {
  int64_t tensors = 0;            // taken from the file (num_batches_tracked not counted)
  bool classifier_reset = false;  // the file's class count differed: fc kept its fresh values
};

// `train --init-from`: replaces the parameters and buffers of `params` (a freshly initialised
// model) by those of `path`, a safetensors file in torchvision's names (what export writes) or a
// ringtrain checkpoint, and refreshes the compute copy. Every tensor of the model must be in the
// file with the same shape and the file must hold no other, or an Error names the first that
// differs, both shapes, the file and the remedy, before anything is loaded; so does a NaN, an
// infinity or a negative running variance in the file (check_loaded_values). The one exception:
// when only the classifier's class count differs, fc.weight and fc.bias keep their fresh values
// (said at info level).
InitFrom init_from(const std::string& path, Backend& backend, ParameterSet& params);

}  // namespace ringtrain
