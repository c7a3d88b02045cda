#pragma once
// A trained model read back from a checkpoint, for evaluation, prediction, export and
// fine-tuning: everything needed to rebuild it is in the checkpoint's meta.
#include <memory>
#include <string>

#include "ringtrain/backend/backend.hpp"
#include "ringtrain/checkpoint/checkpoint.hpp"
#include "ringtrain/nn/resnet.hpp"

namespace ringtrain {

struct LoadedModel {
  CheckpointMeta meta;  // the model, image size, class names and normalisation among it
  std::unique_ptr<ResNet> model;
};

// Builds the ResNet the checkpoint at `path` describes on `backend` (computing in `dtype`) and
// loads its parameters and buffers, every checksum and value verified (load_checkpoint). Throws
// an Error naming the file when it is not a readable checkpoint of this ringtrain's format.
LoadedModel load_model(const std::string& path, Backend& backend, DType dtype = DType::f32);

}  // namespace ringtrain
