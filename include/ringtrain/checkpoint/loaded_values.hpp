#pragma once
// The values no training writes into a model file, checked wherever one is loaded: a checkpoint
// (--resume, eval, predict, export, --init-from) and a safetensors file (--init-from), and before
// a checkpoint is written or counted. Without the check a NaN weight ends the first step as a
// diverged run, blamed on the learning rate, and a negative running variance normalises with the
// square root of a negative number.
#include <cstddef>
#include <string>

namespace ringtrain {

// Why `values` cannot be loaded under `name`, or "" when they can: a NaN or an infinity
// anywhere; a negative value in a batch norm's running variance ("...running_var") or in
// AdamW's second moment ("/optimizer/exp_avg_sq/..."); a first moment ("/optimizer/exp_avg/...")
// of 2^64 or more in magnitude, which no average of gradients whose squares are finite reaches.
// The text names the tensor, the first bad value and its index.
std::string loaded_values_problem(const std::string& name, const float* values, size_t count);

// Throws an Error when loaded_values_problem finds one; the message starts with `file` (the
// file as its reader names it: "checkpoint: PATH") and says what to do.
void check_loaded_values(const std::string& file, const std::string& name, const float* values,
                         size_t count);

}  // namespace ringtrain
