#include "ringtrain/exchange/model_export.hpp"

#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/checkpoint/loaded_values.hpp"
#include "ringtrain/checkpoint/model_file.hpp"
#include "ringtrain/core/atomic_file.hpp"
#include "ringtrain/core/input_file.hpp"
#include "ringtrain/core/json_text.hpp"
#include "ringtrain/core/output_file.hpp"
#include "ringtrain/core/version.hpp"
#include "ringtrain/exchange/torchvision_names.hpp"

namespace ringtrain {
namespace {

namespace fs = std::filesystem;

// The ringtrain tensor `info` (of the flat buffer `flat`) on the host, as f32 NCHW.
Tensor host_copy(Backend& backend, const Tensor& flat, const ParamInfo& info) {
  Tensor host = Tensor::zeros(info.shape, DType::f32);
  backend.copy(flat.slice(info.offset, info.shape), host);
  return host;
}

// A JSON list of floats, each in its shortest decimal form ("[0.4914,0.4822,0.4465]").
std::string json_floats(const std::vector<float>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) text += fmt::format("{}{}", i ? "," : "", values[i]);
  return text + "]";
}

// What the file holds, for the messages: "resnet18 (cifar stem, width 1, 10 classes)".
std::string describe_file(const SafeTensors& file) {
  const auto& m = file.metadata;
  if (!m.count("depth") || !m.count("stem") || !m.count("width") || !m.count("classes"))
    return "a model without ringtrain's metadata";
  return str_cat("resnet", m.at("depth"), " (", m.at("stem"), " stem, width ", m.at("width"), ", ",
                 m.at("classes"), " classes)");
}

// A checkpoint's model (its values checked by load_model) in torchvision's names, with the
// export metadata, computed on the host; `meta` receives the checkpoint's meta.
// Note: torch counts every training forward of a batch norm in num_batches_tracked; ringtrain's
// run did step x accum_steps of them (`count_forwards`; 0 otherwise). torch reads the count only
// when momentum is None (it is 0.1 here).
SafeTensors checkpoint_as_torchvision(const std::string& path, bool count_forwards,
                                      CheckpointMeta& meta) {
  CpuBackend host(1);
  const LoadedModel loaded = load_model(path, host);
  meta = loaded.meta;
  SafeTensors file = torchvision_state(host, loaded.model->parameters(),
                                       count_forwards ? meta.step * meta.accum_steps : 0);
  file.metadata = export_metadata(meta, path);
  return file;
}

// The initial weights in `path`: a checkpoint's model in torchvision's names (load_model checks
// its values), or the file's.
// Whether the file at `path` starts with HDF5's signature.
bool is_hdf5(const std::string& path) {
  char start[8] = {};
  std::ifstream in(path, std::ios::binary);
  return in.read(start, sizeof(start)) && std::memcmp(start, "\211HDF\r\n\032\n", 8) == 0;
}

SafeTensors read_initial_weights(const std::string& path) {
  if (!is_checkpoint(path)) {
    check_input_file(path, "--init-from", "a checkpoint or safetensors file");
    RT_CHECK(!is_hdf5(path), "an HDF5 file without /params, so not a checkpoint (a dataset, ",
             "say): name a checkpoint (ckpt-stepNNNNNNNN.h5) or a safetensors file");
    SafeTensors file = read_safetensors(path);
    for (const SafeTensor& t : file.tensors)
      if (t.dtype == SafeDType::f32)
        check_loaded_values("safetensors: " + path, t.name, t.floats(),
                            static_cast<size_t>(t.numel()));
    return file;
  }
  CheckpointMeta meta;
  return checkpoint_as_torchvision(path, false, meta);
}

const Shape& model_shape(const std::vector<TorchvisionTensor>& model, const std::string& name) {
  for (const TorchvisionTensor& t : model)
    if (t.name == name) return t.shape;
  throw Error(str_cat("init_from: the model has no tensor ", name));
}

bool is_classifier(const std::string& name) {
  return name == "fc.weight" || name == "fc.bias";
}

// Whether the file's classifier differs from the model's in the class count alone.
bool only_classes_differ(const SafeTensors& file, const std::vector<TorchvisionTensor>& model) {
  const SafeTensor* w = file.find("fc.weight");
  const SafeTensor* b = file.find("fc.bias");
  if (!w || !b || w->shape.size() != 2 || b->shape.size() != 1 || w->shape[0] != b->shape[0])
    return false;
  return model_shape(model, "fc.weight")[1] == w->shape[1];
}

// The first tensor of the model missing from the file or of another shape or dtype, or of the
// file missing from the model, as a sentence; "" when every one fits. Classifier shapes are left
// to the caller when `skip_classifier`.
std::string first_misfit(const SafeTensors& file, const std::vector<TorchvisionTensor>& model,
                         bool skip_classifier) {
  for (const TorchvisionTensor& t : model) {
    const SafeTensor* f = file.find(t.name);
    const std::string here = str_cat(shape_str(t.shape), " in this model");
    if (!f) return str_cat("tensor ", t.name, " is not in the file, ", here);
    const SafeDType want = t.source ? SafeDType::f32 : SafeDType::i64;
    if (f->dtype != want)
      return str_cat("tensor ", t.name, " is ", dtype_name(f->dtype), " in the file, ",
                     dtype_name(want), " in this model");
    if (f->shape != t.shape && !(skip_classifier && is_classifier(t.name)))
      return str_cat("tensor ", t.name, " is ", shape_str(f->shape), " in the file, ", here);
  }
  for (const SafeTensor& f : file.tensors) {
    bool known = false;
    for (const TorchvisionTensor& t : model) known = known || t.name == f.name;
    if (!known)
      return str_cat("tensor ", f.name, " ", shape_str(f.shape), " is in the file, ",
                     "not in this model");
  }
  return "";
}

}  // namespace

SafeTensors torchvision_state(Backend& backend, const ParameterSet& params,
                              int64_t batches_tracked) {
  ParameterSet& p = const_cast<ParameterSet&>(params);
  SafeTensors file;
  for (const TorchvisionTensor& t : torchvision_tensors(params)) {
    if (!t.source) {
      file.tensors.push_back(i64_scalar(t.name, batches_tracked));
      continue;
    }
    const Tensor host =
        host_copy(backend, t.buffer ? p.flat_buffers() : p.flat_params(), *t.source);
    file.tensors.push_back(f32_tensor(t.name, t.shape, host.data<float>()));
  }
  return file;
}

std::map<std::string, std::string> export_metadata(const CheckpointMeta& meta,
                                                   const std::string& source) {
  const ResNetConfig& c = meta.model_config;
  return {{"format", "pt"},
          {"depth", std::to_string(c.depth)},
          {"width", fmt::format("{}", c.width)},
          {"stem", to_string(c.stem)},
          {"classes", std::to_string(c.classes)},
          {"in_channels", std::to_string(c.in_channels)},
          {"image_height", std::to_string(meta.image_height)},
          {"image_width", std::to_string(meta.image_width)},
          {"class_names", json_text(nlohmann::json(meta.class_names))},
          {"norm_mean", json_floats(meta.norm.mean)},
          {"norm_std", json_floats(meta.norm.std)},
          {"ringtrain_version", RINGTRAIN_VERSION},
          {"source_checkpoint", source},
          {"step", std::to_string(meta.step)}};
}

void export_checkpoint(const std::string& checkpoint, const std::string& out, bool force) {
  std::error_code error;
  RT_CHECK_AS(ConfigError, !fs::equivalent(checkpoint, out, error), "export: ", out,
              " is the checkpoint itself: name another output file");
  RT_CHECK_AS(ConfigError, !fs::is_directory(out), "export: ", out,
              " is a folder: name the file to write in it");
  const bool stream = is_output_stream(out, OutputKinds::files_and_streams, "export: ");
  RT_CHECK_AS(ConfigError, stream || force || !fs::exists(out), "export: ", out,
              " exists: name another file, or add --force to replace it");
  create_parent_folder(out, "export");
  CheckpointMeta meta;
  const SafeTensors file = checkpoint_as_torchvision(checkpoint, true, meta);
  write_safetensors(out, file);
  spdlog::info(
      "wrote {}: {} tensors of resnet{} ({} stem, width {}, {} classes) in torchvision's "
      "names, from {} (step {})",
      out, file.tensors.size(), meta.model_config.depth, to_string(meta.model_config.stem),
      meta.model_config.width, meta.model_config.classes, checkpoint, meta.step);
}

InitFrom init_from(const std::string& path, Backend& backend, ParameterSet& params) {
  check_input_file(path, "--init-from", "a checkpoint or a .safetensors file");
  SafeTensors file;
  try {
    file = read_initial_weights(path);
  } catch (const Error& e) {
    throw Error(str_cat("--init-from ", path, ": ", e.what()));
  }
  const std::vector<TorchvisionTensor> model = torchvision_tensors(params);
  const Shape& classes = model_shape(model, "fc.bias");
  const bool reset = only_classes_differ(file, model) && file.find("fc.bias")->shape != classes;
  const std::string misfit = first_misfit(file, model, reset);
  RT_CHECK(misfit.empty(), "--init-from ", path, " does not fit this model: ", misfit,
           "; the file holds ", describe_file(file), ": train with its --depth, --width and ",
           "--stem on data with as many channels (only the class count may differ)");
  if (reset)
    spdlog::info(
        "--init-from {}: its classifier has {} classes, this data {}: fc.weight and "
        "fc.bias start fresh, as a new model's; every other tensor comes from the file",
        path, file.find("fc.bias")->shape[0], classes[0]);
  InitFrom result{0, reset};
  for (const TorchvisionTensor& t : model) {
    if (!t.source || (reset && is_classifier(t.name))) continue;
    Tensor host = Tensor::zeros(t.shape, DType::f32);
    const std::vector<char>& bytes = file.find(t.name)->bytes;
    std::copy(bytes.begin(), bytes.end(), static_cast<char*>(host.raw()));
    Tensor& flat = t.buffer ? params.flat_buffers() : params.flat_params();
    Tensor dst = flat.slice(t.source->offset, t.shape);
    backend.copy(host, dst);
    ++result.tensors;
  }
  params.refresh_weights(backend);
  spdlog::info("--init-from {}: {} parameters and buffers loaded from {}", path, result.tensors,
               describe_file(file));
  return result;
}

}  // namespace ringtrain
