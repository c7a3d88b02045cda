#pragma once
#include <memory>

#include "ringtrain/optim/optimizer.hpp"

namespace ringtrain {

// The optimizer config.kind names, over `params` on `backend`; throws a ConfigError naming the
// setting when a value is out of the rule's range. Every optimizer is registered here: its name
// for --optimizer and its constructor.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config, ParameterSet& params,
                                          Backend& backend);

}  // namespace ringtrain
