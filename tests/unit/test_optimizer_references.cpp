// Every optimizer against its reference trajectories (tests/data/optimizer_references/NAME.json,
// written by tools/optimizer_references.py where torch is installed; the script says what
// computed each optimizer's references). Each case starts five small parameters of ResNet's
// kinds (conv weight, batch-norm weight and bias, linear weight and bias) at stored values and
// applies six updates with stored learning rates and gradients; the parameters after each update
// must match the reference's. Every optimizer --optimizer accepts must have a file: a new one
// fails here until its reference is committed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/optim/make_optimizer.hpp"

namespace ringtrain {
namespace {

using nlohmann::json;

json reference_of(const std::string& optimizer) {
  const std::string path =
      std::string(RINGTRAIN_TEST_DATA_DIR) + "/optimizer_references/" + optimizer + ".json";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "no reference trajectories for --optimizer " << optimizer << ": "
                         << path << " (write it with tools/optimizer_references.py)";
  return in.good() ? json::parse(in) : json();
}

ParamKind kind_of(const std::string& name) {
  static const NameTable<ParamKind> kinds = {{"conv_weight", ParamKind::conv_weight},
                                             {"norm_weight", ParamKind::norm_weight},
                                             {"norm_bias", ParamKind::norm_bias},
                                             {"linear_weight", ParamKind::linear_weight},
                                             {"linear_bias", ParamKind::linear_bias}};
  for (const auto& [n, kind] : kinds)
    if (n == name) return kind;
  throw Error("unknown parameter kind " + name);
}

// The case's settings over the defaults; a setting the file names must be one this test knows.
OptimizerConfig config_of(OptimizerKind kind, const json& settings) {
  OptimizerConfig c;
  c.kind = kind;
  for (const auto& [key, value] : settings.items()) {
    if (key == "momentum") {
      c.momentum = value.get<float>();
    } else if (key == "weight_decay") {
      c.weight_decay = value.get<float>();
    } else if (key == "nesterov") {
      c.nesterov = value.get<bool>();
    } else if (key == "decay_norm_and_bias") {
      c.decay_norm_and_bias = value.get<bool>();
    } else if (key == "lars_eta") {
      c.lars_eta = value.get<float>();
    } else if (key == "lars_epsilon") {
      c.lars_epsilon = value.get<float>();
    } else if (key == "beta1") {
      c.beta1 = value.get<float>();
    } else if (key == "beta2") {
      c.beta2 = value.get<float>();
    } else if (key == "adam_eps") {
      c.adam_eps = value.get<float>();
    } else {
      ADD_FAILURE() << "setting " << key << " unknown to this test";
    }
  }
  return c;
}

void set_values(Tensor t, const json& values, float scale) {
  ASSERT_EQ(static_cast<int64_t>(values.size()), t.numel());
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = scale * values[static_cast<size_t>(i)].get<float>();
}

// Runs one case with the gradients multiplied by `loss_scale` and the updates told to divide
// it out, as fp16 loss scaling does (a power of two: the scaled gradients are exact).
void run_case(OptimizerKind kind, const json& c, float loss_scale) {
  CpuBackend backend(1);
  ParameterSet params;
  std::vector<int> ids;
  for (const json& p : c["parameters"])
    ids.push_back(params.add(p["name"], p["shape"].get<Shape>(), kind_of(p["kind"])));
  params.allocate(backend, DType::f32);
  for (size_t i = 0; i < ids.size(); ++i)
    set_values(params.param(ids[i]), c["parameters"][i]["init"], 1.0f);
  const auto optimizer = make_optimizer(config_of(kind, c["config"]), params, backend);
  int step = 0;
  for (const json& s : c["steps"]) {
    ++step;
    params.zero_grad(backend);
    for (size_t i = 0; i < ids.size(); ++i)
      set_values(params.grad(ids[i]), s["grads"][params.param_infos()[i].name], loss_scale);
    optimizer->step(s["lr"].get<float>(), 1.0f / loss_scale);
    for (size_t i = 0; i < ids.size(); ++i) {
      const std::string& name = params.param_infos()[i].name;
      const json& want = s["after"][name];
      const Tensor got = params.param(ids[i]);
      for (int64_t e = 0; e < got.numel(); ++e) {
        const float w = want[static_cast<size_t>(e)].get<float>();
        ASSERT_NEAR(got.data<float>()[e], w, 2e-6f * std::max(1.0f, std::fabs(w)))
            << c["name"].get<std::string>() << ", step " << step << ", " << name << "[" << e
            << "], loss scale " << loss_scale;
      }
    }
  }
  EXPECT_EQ(optimizer->steps(), step);
}

TEST(OptimizerReferences, EveryOptimizerFollowsItsReferenceTrajectories) {
  for (const auto& [name, kind] : names_of<OptimizerKind>()) {
    const json reference = reference_of(name);
    ASSERT_FALSE(reference.is_null()) << name;
    ASSERT_EQ(reference["optimizer"], name);
    ASSERT_GE(reference["cases"].size(), 2u) << name;
    for (const json& c : reference["cases"]) {
      run_case(kind, c, 1.0f);
      run_case(kind, c, 1024.0f);
    }
  }
}

}  // namespace
}  // namespace ringtrain
