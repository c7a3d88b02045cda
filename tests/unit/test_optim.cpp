// SGD and the learning-rate schedules against values printed by PyTorch 1.13 for the same
// settings (torch.optim.SGD, StepLR, CosineAnnealingLR, LinearLR+SequentialLR, OneCycleLR;
// PolynomialLR from PyTorch 2.15).
#include <gtest/gtest.h>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/optim/lr_schedule.hpp"
#include "ringtrain/optim/sgd.hpp"

namespace ringtrain {
namespace {

// Two steps on w (decayed) and b (a bias, not decayed) with lr 0.1, momentum 0.9, wd 0.01.
// With loss_scale != 1 the gradients arrive multiplied by it and the step divides it out.
std::vector<float> two_sgd_steps(bool nesterov, float loss_scale = 1.0f) {
  CpuBackend backend(1);
  ParameterSet ps;
  const int w = ps.add("fc.weight", {3}, ParamKind::linear_weight);
  const int b = ps.add("fc.bias", {1}, ParamKind::linear_bias);
  ps.allocate(backend, DType::f32);
  // The four values of w and b, wherever the layout puts them in the flat buffers.
  auto element = [&](Tensor (ParameterSet::*view)(int) const, int i) -> float& {
    return i < 3 ? (ps.*view)(w).data<float>()[i] : (ps.*view)(b).data<float>()[0];
  };
  const float init[] = {1.0f, -2.0f, 0.5f, 0.3f};
  for (int i = 0; i < 4; ++i) element(&ParameterSet::param, i) = init[i];
  OptimizerConfig c;
  c.momentum = 0.9f;
  c.weight_decay = 0.01f;
  c.nesterov = nesterov;
  c.decay_norm_and_bias = false;
  Sgd sgd(ps, backend, c);
  const float grads[2][4] = {{0.5f, 0.25f, -1.0f, 0.2f}, {-0.5f, 1.0f, 2.0f, -0.4f}};
  for (const auto& g : grads) {
    for (int i = 0; i < 4; ++i) element(&ParameterSet::grad, i) = g[i] * loss_scale;
    sgd.step(0.1f, 1.0f / loss_scale);
  }
  std::vector<float> out;
  for (int i = 0; i < 4; ++i) out.push_back(element(&ParameterSet::param, i));
  EXPECT_EQ(ps.param(w).numel() + ps.param(b).numel(), 4);
  return out;
}

TEST(Sgd, MomentumMatchesPyTorch) {
  const std::vector<float> ref = {0.952151f, -2.1416769f, 0.488450497f, 0.302000016f};
  const std::vector<float> got = two_sgd_steps(false);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(got[i], ref[i], 1e-6) << i;
}

TEST(Sgd, NesterovMatchesPyTorch) {
  const std::vector<float> ref = {0.955074131f, -2.24844694f, 0.388335794f, 0.321800023f};
  const std::vector<float> got = two_sgd_steps(true);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(got[i], ref[i], 1e-6) << i;
}

TEST(Sgd, GradScaleDividesTheLossScaleOut) {
  const std::vector<float> ref = two_sgd_steps(false);
  const std::vector<float> scaled = two_sgd_steps(false, 1024.0f);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(scaled[i], ref[i], 1e-6) << i;
}

TEST(Sgd, DecayRunsExcludeNormAndBiasOnlyWhenAsked) {
  ParameterSet ps;
  ps.add("conv.weight", {2}, ParamKind::conv_weight);
  ps.add("bn.weight", {3}, ParamKind::norm_weight);
  ps.add("bn.bias", {3}, ParamKind::norm_bias);
  ps.add("fc.weight", {4}, ParamKind::linear_weight);
  // Each parameter starts 128 elements after the previous one; its padding goes with it.
  const auto all = ps.decay_runs(true);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].size, ps.flat_size());
  EXPECT_EQ(ps.flat_size(), 3 * 128 + 4);
  const auto some = ps.decay_runs(false);
  ASSERT_EQ(some.size(), 3u);
  EXPECT_TRUE(some[0].decay);
  EXPECT_EQ(some[0].size, 128);
  EXPECT_FALSE(some[1].decay);
  EXPECT_EQ(some[1].offset, 128);
  EXPECT_EQ(some[1].size, 256);
  EXPECT_TRUE(some[2].decay);
  EXPECT_EQ(some[2].offset, 384);
  EXPECT_EQ(some[2].size, 4);
}

void expect_schedule(LrSchedule s, const std::vector<double>& ref) {
  s.validate();
  for (size_t i = 0; i < ref.size(); ++i)
    EXPECT_NEAR(s.at(static_cast<int64_t>(i)), ref[i], 1e-9) << to_string(s.kind) << " step " << i;
}

TEST(LrSchedule, MatchesPyTorch) {
  LrSchedule s;
  s.base_lr = 0.1;
  s.total_steps = 10;
  s.kind = Schedule::onecycle;
  expect_schedule(s, {0.004, 0.052, 0.1, 0.0950484632013, 0.081174565395, 0.0611262021936,
                      0.0388741978064, 0.018825834605, 0.00495193679865, 4e-07});
  s.kind = Schedule::cosine;
  expect_schedule(s, {0.1, 0.0975528258148, 0.0904508497187, 0.0793892626146, 0.0654508497187, 0.05,
                      0.0345491502813, 0.0206107373854, 0.00954915028125, 0.00244717418524});
  s.kind = Schedule::step;
  s.step_size = 3;
  expect_schedule(s, {0.1, 0.1, 0.1, 0.01, 0.01, 0.01, 0.001, 0.001, 0.001, 0.0001});
  s.kind = Schedule::poly;
  expect_schedule(s, {0.1, 0.081, 0.064, 0.049, 0.036, 0.025, 0.016, 0.009, 0.004, 0.001});
  s.kind = Schedule::cosine;
  s.warmup_steps = 3;
  expect_schedule(s, {0.01, 0.04, 0.07, 0.1, 0.0950484433951, 0.0811744900929, 0.0611260466978,
                      0.0388739533022, 0.0188255099071, 0.00495155660488});
  s.kind = Schedule::poly;  // SequentialLR of LinearLR and PolynomialLR(total_iters=7, power=2)
  expect_schedule(s, {0.01, 0.04, 0.07, 0.1, 0.0734693877551, 0.0510204081633, 0.0326530612245,
                      0.0183673469388, 0.00816326530612, 0.00204081632653});
}

TEST(LrSchedule, RejectsBadSettings) {
  LrSchedule s;
  EXPECT_THROW(parse<Schedule>("--schedule", "exponential"), ConfigError);
  s.kind = Schedule::cosine;
  s.warmup_steps = s.total_steps;
  EXPECT_THROW(s.validate(), Error);
  s.warmup_steps = 0;
  s.base_lr = 0;
  EXPECT_THROW(s.validate(), Error);
}

}  // namespace
}  // namespace ringtrain
