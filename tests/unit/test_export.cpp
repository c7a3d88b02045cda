// `ringtrain export` and `train --init-from` in the library: checkpoint -> safetensors ->
// a fresh model gives back the same tensors bit for bit and the same logits; files that do not
// fit are refused, naming the tensor.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <string>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/checkpoint/model_file.hpp"
#include "ringtrain/exchange/model_export.hpp"
#include "test_util.hpp"

namespace ringtrain {
namespace {

using test::temp_path;

ResNetConfig small_config(int classes = 10, double width = 0.125) {
  ResNetConfig c;
  c.depth = 18;
  c.width = width;
  c.classes = classes;
  return c;
}

// A model whose weights and running statistics are not an initialisation's: seed 3, then three
// training forwards on random images (which update the running statistics).
void train_forwards(ResNet& model) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 3; ++i) model.forward(test::random_tensor<float>({4, 3, 8, 8}, rng), true);
}

std::string checkpoint_of(ResNet& model, CpuBackend& cpu, const std::string& name) {
  CheckpointMeta meta;
  meta.model_config = model.config();
  meta.image_height = meta.image_width = 8;
  meta.class_names = std::vector<std::string>(static_cast<size_t>(model.config().classes), "c");
  meta.norm = {{0.4914f, 0.4822f, 0.4465f}, {0.25f, 0.25f, 0.25f}};
  meta.class_names[0] = "chat \xc3\xa9t\xc3\xa9 \xff";  // UTF-8, and a byte that is not
  meta.step = 3;
  ParameterSet& p = model.parameters();
  const std::string path = temp_path(name);
  write_checkpoint(path, cpu, p, {{"momentum", cpu.zeros(p.flat_params().shape(), DType::f32)}},
                   meta);
  return path;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

Tensor eval_logits(ResNet& model) {
  std::mt19937_64 rng(5);
  const Tensor& logits = model.forward(test::random_tensor<float>({4, 3, 8, 8}, rng), false);
  Tensor copy = Tensor::zeros(logits.shape(), DType::f32);
  model.backend().copy(logits, copy);
  return copy;
}

std::string init_error(const std::string& path, const ResNetConfig& c) {
  CpuBackend cpu(1);
  ResNet model(c, cpu, DType::f32, 4);
  try {
    init_from(path, cpu, model.parameters());
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(InitFrom, AnExportedModelComesBackBitExactWithTheSameLogits) {
  CpuBackend cpu(1);
  ResNet source(small_config(), cpu, DType::f32, 3);
  train_forwards(source);
  const std::string checkpoint = checkpoint_of(source, cpu, "source.h5");
  const std::string exported = temp_path("source.safetensors");
  export_checkpoint(checkpoint, exported, false);
  const SafeTensors file = read_safetensors(exported);
  EXPECT_EQ(file.metadata.at("depth"), "18");
  EXPECT_EQ(file.metadata.at("width"), "0.125");
  EXPECT_EQ(file.metadata.at("norm_mean"), "[0.4914,0.4822,0.4465]");  // shortest decimal form
  const std::string names = "[\"chat \xc3\xa9t\xc3\xa9 \xef\xbf\xbd\",\"c\"";  // U+FFFD for 0xff
  EXPECT_EQ(file.metadata.at("class_names").rfind(names, 0), 0u);
  for (const std::string& from : {exported, checkpoint}) {
    ResNet fresh(small_config(), cpu, DType::f32, 4);  // another seed: other initial weights
    ASSERT_FALSE(same_bytes(fresh.parameters().flat_params(), source.parameters().flat_params()));
    const InitFrom result = init_from(from, cpu, fresh.parameters());
    EXPECT_FALSE(result.classifier_reset);
    EXPECT_EQ(result.tensors, static_cast<int64_t>(source.parameters().param_infos().size() +
                                                   source.parameters().buffer_infos().size()));
    EXPECT_TRUE(same_bytes(fresh.parameters().flat_params(), source.parameters().flat_params()))
        << from;
    EXPECT_TRUE(same_bytes(fresh.parameters().flat_buffers(), source.parameters().flat_buffers()))
        << from;
    EXPECT_TRUE(same_bytes(eval_logits(fresh), eval_logits(source))) << from;  // so the same loss
  }
}

TEST(InitFrom, AnotherClassCountStartsOnlyTheClassifierFresh) {
  CpuBackend cpu(1);
  ResNet source(small_config(10), cpu, DType::f32, 3);
  train_forwards(source);
  const std::string exported = temp_path("ten.safetensors");
  export_checkpoint(checkpoint_of(source, cpu, "ten.h5"), exported, false);
  ResNet tuned(small_config(4), cpu, DType::f32, 4);
  ResNet fresh(small_config(4), cpu, DType::f32, 4);
  const InitFrom result = init_from(exported, cpu, tuned.parameters());
  EXPECT_TRUE(result.classifier_reset);
  ParameterSet &t = tuned.parameters(), &f = fresh.parameters(), &s = source.parameters();
  for (size_t i = 0; i < t.param_infos().size(); ++i) {
    const ParamInfo& info = t.param_infos()[i];
    const bool fc = info.name.rfind("fc.", 0) == 0;  // a fresh model's; the others the file's
    ParameterSet& expected = fc ? f : s;
    const ParamInfo& other = expected.param_infos()[i];
    EXPECT_TRUE(same_bytes(t.flat_params().slice(info.offset, info.shape),
                           expected.flat_params().slice(other.offset, other.shape)))
        << info.name;
  }
  EXPECT_TRUE(same_bytes(t.flat_buffers(), s.flat_buffers()));
}

TEST(InitFrom, AFileThatDoesNotFitIsRefusedNamingTheFirstTensor) {
  CpuBackend cpu(1);
  ResNet source(small_config(), cpu, DType::f32, 3);
  const std::string exported = temp_path("fit.safetensors");
  export_checkpoint(checkpoint_of(source, cpu, "fit.h5"), exported, false);
  const std::string wider = init_error(exported, small_config(10, 0.25));
  EXPECT_NE(wider.find(str_cat("--init-from ", exported,
                               " does not fit this model: tensor "
                               "conv1.weight is [8,3,3,3] in the file, [16,3,3,3] in this model; "
                               "the file holds resnet18 (cifar stem, width 0.125, 10 classes): "
                               "train with its --depth, --width and --stem")),
            std::string::npos)
      << wider;
  SafeTensors file = read_safetensors(exported);
  file.tensors.erase(file.tensors.begin() + 4);  // bn1.running_var
  const std::string missing = temp_path("missing.safetensors");
  write_safetensors(missing, file);
  EXPECT_NE(init_error(missing, small_config())
                .find("tensor bn1.running_var is not in the file, [8] in this model"),
            std::string::npos);
  file = read_safetensors(exported);
  file.tensors.push_back(i64_scalar("head.count", 1));
  write_safetensors(missing, file);
  EXPECT_NE(init_error(missing, small_config())
                .find("tensor head.count [] is in the file, not in this model"),
            std::string::npos);
  file = read_safetensors(exported);
  file.tensors[5] =
      f32_tensor("bn1.num_batches_tracked", {}, std::vector<float>{0.0f, 0.0f}.data());
  write_safetensors(missing, file);
  EXPECT_NE(init_error(missing, small_config())
                .find("tensor bn1.num_batches_tracked is F32 in the file, I64 in this model"),
            std::string::npos);
  const std::string garbage = temp_path("garbage.safetensors");
  std::ofstream(garbage) << "garbage";
  EXPECT_NE(init_error(garbage, small_config()).find(str_cat("--init-from ", garbage, ": ")),
            std::string::npos);
}

// `file` with the value at `index` of the tensor `name` replaced by `value`, at `path`.
std::string with_value(SafeTensors file, const std::string& name, size_t index, float value,
                       const std::string& path) {
  for (SafeTensor& t : file.tensors)
    if (t.name == name) std::memcpy(t.bytes.data() + 4 * index, &value, 4);
  write_safetensors(path, file);
  return path;
}

TEST(InitFrom, NonFiniteWeightsAndNegativeVariancesInAFileAreRefusedNamingTheTensor) {
  CpuBackend cpu(1);
  ResNet source(small_config(), cpu, DType::f32, 3);
  const std::string exported = temp_path("values.safetensors");
  export_checkpoint(checkpoint_of(source, cpu, "values.h5"), exported, false);
  const SafeTensors file = read_safetensors(exported);
  const std::string bad = temp_path("bad values.safetensors");
  const std::string nan =
      init_error(with_value(file, "conv1.weight", 3, std::numeric_limits<float>::quiet_NaN(), bad),
                 small_config());
  EXPECT_NE(nan.find(str_cat("--init-from ", bad, ": safetensors: ", bad,
                             ": tensor conv1.weight holds nan at index 3 of 216, not a finite "
                             "number: the file is corrupt")),
            std::string::npos)
      << nan;
  EXPECT_NE(init_error(with_value(file, "fc.bias", 9, -INFINITY, bad), small_config())
                .find("tensor fc.bias holds -inf at index 9 of 10, not a finite number"),
            std::string::npos);
  EXPECT_NE(init_error(with_value(file, "layer1.0.bn2.running_var", 2, -0.5f, bad), small_config())
                .find("tensor layer1.0.bn2.running_var holds -0.5 at index 2 of 8, a negative "
                      "batch-norm running variance"),
            std::string::npos);
  // Negative values are weights' own; a variance of 0 is a variance.
  EXPECT_EQ(init_error(with_value(file, "layer1.0.bn2.weight", 2, -0.5f, bad), small_config()),
            "no error");
  EXPECT_EQ(init_error(with_value(file, "layer1.0.bn2.running_var", 2, 0.0f, bad), small_config()),
            "no error");
}

TEST(InitFrom, NonFiniteWeightsAndNegativeVariancesInACheckpointAreRefusedNamingTheTensor) {
  CpuBackend cpu(1);
  ResNet source(small_config(), cpu, DType::f32, 3);
  ParameterSet& p = source.parameters();
  const ParamInfo& weight = p.param_infos().at(1);
  p.flat_params().data<float>()[weight.offset + 5] = INFINITY;
  const std::string inf = checkpoint_of(source, cpu, "inf.h5");
  EXPECT_NE(init_error(inf, small_config())
                .find(str_cat("checkpoint: ", inf, ": tensor /params/", weight.name,
                              " holds inf at index 5")),
            std::string::npos)
      << init_error(inf, small_config());
  p.flat_params().data<float>()[weight.offset + 5] = 1.0f;
  const ParamInfo* variance = nullptr;
  for (const ParamInfo& info : p.buffer_infos())
    if (!variance && info.name.find("running_var") != std::string::npos) variance = &info;
  ASSERT_NE(variance, nullptr);
  p.flat_buffers().data<float>()[variance->offset + 1] = -2.0f;
  const std::string negative = checkpoint_of(source, cpu, "negative.h5");
  // Every path that loads a checkpoint: --init-from, and load_model (eval, predict, export) and
  // --resume through load_checkpoint.
  EXPECT_NE(init_error(negative, small_config())
                .find(str_cat("checkpoint: ", negative, ": tensor /buffers/", variance->name,
                              " holds -2 at index 1 of ")),
            std::string::npos);
  try {
    load_model(negative, cpu);
    ADD_FAILURE() << "load_model loaded a negative running variance";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a negative batch-norm running variance"),
              std::string::npos)
        << e.what();
  }
}

TEST(Export, AnExistingOutputIsReplacedOnlyWithForce) {
  CpuBackend cpu(1);
  ResNet source(small_config(), cpu, DType::f32, 3);
  const std::string checkpoint = checkpoint_of(source, cpu, "force.h5");
  const std::string out = temp_path("force.safetensors");
  std::ofstream(out) << "old";
  EXPECT_THROW(export_checkpoint(checkpoint, out, false), ConfigError);
  export_checkpoint(checkpoint, out, true);
  EXPECT_TRUE(is_safetensors(out));
  EXPECT_THROW(export_checkpoint(checkpoint, checkpoint, true), ConfigError);
}

}  // namespace
}  // namespace ringtrain
