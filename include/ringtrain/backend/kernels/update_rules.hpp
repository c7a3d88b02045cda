#pragma once
// The optimizers' update rules the backends run: one line each. A rule is its hyper-parameter
// struct, which names its update body (kernels/<rule>.hpp); Backend::optimizer_step takes any of
// them and both backends run the body, so a new rule touches no backend file.
#include <variant>

#include "ringtrain/backend/kernels/adamw.hpp"
#include "ringtrain/backend/kernels/lars.hpp"
#include "ringtrain/backend/kernels/sgd.hpp"

namespace ringtrain {

using UpdateRule = std::variant<SgdHyper, LarsHyper, AdamWHyper>;

}  // namespace ringtrain
