#pragma once
// The values no training writes into a model file, checked wherever one is loaded: a checkpoint
// (--resume, eval, predict, export, --init-from) and a safetensors file (--init-from). Without
// the check a NaN weight ends the first step as a diverged run, blamed on the learning rate,
// and a negative running variance normalises with the square root of a negative number.
#include <cstddef>
#include <string>

namespace ringtrain {

// Throws an Error when `values` holds a NaN or an infinity, or when `name` is a batch norm's
// running_var ("...running_var") holding a negative value. The message starts with `file` (the
// file as its reader names it: "checkpoint: PATH"), then names the tensor, the first bad value
// and its index.
void check_loaded_values(const std::string& file, const std::string& name, const float* values,
                         size_t count);

}  // namespace ringtrain
