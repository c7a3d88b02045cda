#include "ringtrain/checkpoint/model_file.hpp"

namespace ringtrain {

LoadedModel load_model(const std::string& path, Backend& backend, DType dtype) {
  LoadedModel loaded;
  loaded.meta = read_checkpoint_meta(path);
  // The seed only decides the initial weights, which the checkpoint's replace.
  loaded.model = std::make_unique<ResNet>(loaded.meta.model_config, backend, dtype, 0);
  ParameterSet& params = loaded.model->parameters();
  load_checkpoint(path, backend, params, nullptr);
  return loaded;
}

}  // namespace ringtrain
