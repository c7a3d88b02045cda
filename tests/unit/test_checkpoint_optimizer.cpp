// The optimizer's state in checkpoints: format 4 stores any optimizer's named state tensors and its
// update count, and a checkpoint of format 3 (SGD's /momentum) still loads.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cmath>
#include <string>
#include <vector>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/checkpoint/checkpoint.hpp"
#include "ringtrain/nn/resnet.hpp"
#include "ringtrain/optim/make_optimizer.hpp"
#include "ringtrain/optim/sgd.hpp"
#include "test_util.hpp"

namespace ringtrain {
namespace {

using test::temp_path;

// A checkpoint of format 3, written by ringtrain 0.1.0 before the optimizer's state was stored
// by name: 3 SGD steps (lr 0.05, momentum 0.9) of a resnet18 of width 1/64 on 8x8 synthetic
// images of 2 classes (`data synth --train 64 --test 16 --height 8 --width 8 --classes 2`, then
// `train --depth 18 --width 0.015625 --batch-size 16 --steps 3 --lr 0.05`).
const char* const kFormat3 = RINGTRAIN_TEST_DATA_DIR "/format3_sgd_checkpoint.h5";

// Dataset `name` of the HDF5 file at `path`, as floats.
std::vector<float> read_dataset(const std::string& path, const std::string& name) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_GE(file, 0) << path;
  const hid_t ds = H5Dopen2(file, name.c_str(), H5P_DEFAULT);
  EXPECT_GE(ds, 0) << path << ": " << name;
  const hid_t space = H5Dget_space(ds);
  std::vector<float> values(static_cast<size_t>(H5Sget_simple_extent_npoints(space)));
  EXPECT_GE(H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
  EXPECT_GE(H5Sclose(space), 0);
  EXPECT_GE(H5Dclose(ds), 0);
  EXPECT_GE(H5Fclose(file), 0);
  return values;
}

bool has_link(const std::string& path, const std::string& name) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const bool has = H5Lexists(file, name.c_str(), H5P_DEFAULT) > 0;
  EXPECT_GE(H5Fclose(file), 0);
  return has;
}

std::vector<float> values_of(const Tensor& t) {
  return {t.data<float>(), t.data<float>() + t.numel()};
}

TEST(CheckpointFormat, Format3LoadsIntoSgdAndIsWrittenBackAsFormat4) {
  const CheckpointMeta meta = verify_checkpoint(kFormat3);
  EXPECT_EQ(meta.step, 3);
  EXPECT_EQ(meta.optimizer, "sgd");
  EXPECT_EQ(meta.optimizer_steps, 3);
  CpuBackend backend(1);
  ResNet model(meta.model_config, backend, DType::f32, 5);
  ParameterSet& params = model.parameters();
  Sgd sgd(params, backend, OptimizerConfig{});
  load_checkpoint(kFormat3, backend, params, &sgd);
  EXPECT_EQ(sgd.steps(), 3);
  double momentum_sum = 0;
  for (const ParamInfo& info : params.param_infos()) {
    const std::vector<float> stored = read_dataset(kFormat3, "/momentum/" + info.name);
    const std::vector<float> loaded =
        values_of(sgd.momentum_buffer().slice(info.offset, info.shape));
    EXPECT_EQ(loaded, stored) << info.name;
    for (float v : stored) momentum_sum += std::fabs(v);
  }
  EXPECT_GT(momentum_sum, 0.0);  // three steps of momentum, not zeros

  const std::string now = temp_path("format4_sgd.h5");
  CheckpointMeta written = meta;
  written.optimizer_steps = sgd.steps();
  write_checkpoint(now, backend, params, sgd.state(), written);
  EXPECT_TRUE(has_link(now, "/optimizer/momentum"));
  EXPECT_FALSE(has_link(now, "/momentum"));
  const std::string inspected = inspect_checkpoint(now);
  EXPECT_NE(inspected.find("format 4"), std::string::npos) << inspected;
  EXPECT_NE(inspected.find("optimizer sgd, 3 updates done"), std::string::npos) << inspected;

  ResNet again(meta.model_config, backend, DType::f32, 6);
  Sgd sgd_again(again.parameters(), backend, OptimizerConfig{});
  load_checkpoint(now, backend, again.parameters(), &sgd_again);
  EXPECT_EQ(sgd_again.steps(), 3);
  EXPECT_EQ(values_of(sgd_again.momentum_buffer()), values_of(sgd.momentum_buffer()));
  EXPECT_EQ(values_of(again.parameters().flat_params()), values_of(params.flat_params()));
  EXPECT_EQ(values_of(again.parameters().flat_buffers()), values_of(params.flat_buffers()));
}

// The update count is the optimizer's, not the run's steps: fp16 skips some updates.
TEST(CheckpointFormat, TheUpdateCountIsStoredAndRestored) {
  CpuBackend backend(1);
  ResNetConfig mc;
  mc.depth = 18;
  mc.width = 1.0 / 64;
  mc.classes = 2;
  ResNet model(mc, backend, DType::f32, 1);
  Sgd sgd(model.parameters(), backend, OptimizerConfig{});
  sgd.set_steps(41);
  CheckpointMeta meta;
  meta.step = 57;
  meta.optimizer_steps = sgd.steps();
  const std::string path = temp_path("update_count.h5");
  write_checkpoint(path, backend, model.parameters(), sgd.state(), meta);
  Sgd loaded(model.parameters(), backend, OptimizerConfig{});
  load_checkpoint(path, backend, model.parameters(), &loaded);
  EXPECT_EQ(loaded.steps(), 41);
  EXPECT_EQ(read_checkpoint_meta(path).step, 57);
}

// A checkpoint holds one optimizer's state: resuming it with another is refused before anything
// is loaded, naming both and the remedies.
TEST(CheckpointFormat, AnotherOptimizersCheckpointIsRefused) {
  CpuBackend backend(1);
  ResNetConfig mc;
  mc.depth = 18;
  mc.width = 1.0 / 64;
  mc.classes = 2;
  ResNet saved(mc, backend, DType::f32, 2);
  Sgd sgd(saved.parameters(), backend, OptimizerConfig{});
  CheckpointMeta meta;
  meta.optimizer = "sgd";
  const std::string path = temp_path("sgd_state.h5");
  write_checkpoint(path, backend, saved.parameters(), sgd.state(), meta);
  ResNet model(mc, backend, DType::f32, 1);
  OptimizerConfig adamw;
  adamw.kind = OptimizerKind::adamw;
  const auto other = make_optimizer(adamw, model.parameters(), backend);
  const std::vector<float> before = values_of(model.parameters().flat_params());
  try {
    load_checkpoint(path, backend, model.parameters(), other.get());
    FAIL() << "loaded SGD's state into AdamW";
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("holds the state of --optimizer sgd"), std::string::npos) << message;
    EXPECT_NE(message.find("trains with --optimizer adamw"), std::string::npos) << message;
    EXPECT_NE(message.find("--init-from " + path), std::string::npos) << message;
  }
  EXPECT_EQ(values_of(model.parameters().flat_params()), before);  // nothing was loaded
  EXPECT_EQ(other->steps(), 0);
}

}  // namespace
}  // namespace ringtrain
