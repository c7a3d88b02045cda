#include "ringtrain/optim/make_optimizer.hpp"

#include "ringtrain/optim/adamw.hpp"
#include "ringtrain/optim/lars.hpp"
#include "ringtrain/optim/sgd.hpp"

namespace ringtrain {

template <>
const NameTable<OptimizerKind>& names_of<OptimizerKind>() {
  static const NameTable<OptimizerKind> names = {
      {"sgd", OptimizerKind::sgd}, {"lars", OptimizerKind::lars}, {"adamw", OptimizerKind::adamw}};
  return names;
}

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config, ParameterSet& params,
                                          Backend& backend) {
  switch (config.kind) {
    case OptimizerKind::sgd:
      return std::make_unique<Sgd>(params, backend, config);
    case OptimizerKind::lars:
      return std::make_unique<Lars>(params, backend, config);
    case OptimizerKind::adamw:
      return std::make_unique<AdamW>(params, backend, config);
  }
  throw Error(str_cat("make_optimizer: optimizer kind ", static_cast<int>(config.kind),
                      " has no constructor"));
}

}  // namespace ringtrain
