// The whole training step on the GPU waits for no device value: steps in bf16 read nothing until
// their losses are taken (one read for all of them); fp16 reads one value a step, its finite
// check. Counted by Device::values_read, which a copy to the host also counts. Skipped, with the
// reason, where there is no GPU.
#include "../support/small_run.hpp"
#include "gpu_test_util.hpp"
#include "ringtrain/run/session.hpp"
#include "ringtrain/run/step.hpp"

namespace ringtrain {
namespace {

TrainConfig small_cuda_config(Precision amp) {
  TrainConfig c = test::small_cuda_run(str_cat("step_reads_", to_string(amp)));
  c.amp = amp;
  c.accum_steps = 2;
  c.steps = 3;
  return c;
}

// Runs three steps; returns the reads they made and checks that taking their losses is one more.
int64_t reads_of_three_steps(Precision amp) {
  TrainSession s(small_cuda_config(amp));
  s.train_batches->start_epoch(0);
  const int64_t before = s.backend().values_read();
  for (int64_t step = 0; step < 3; ++step) train_step(s, s.schedule.at(step), step);
  const int64_t during = s.backend().values_read() - before;
  const std::vector<BatchResult> losses = take_step_losses(s);
  EXPECT_EQ(s.backend().values_read() - before, during + 1);
  EXPECT_EQ(losses.size(), 3u);
  for (const BatchResult& r : losses) EXPECT_TRUE(std::isfinite(r.loss)) << r.loss;
  return during;
}

TEST(CudaTraining, StepsReadNoDeviceValueUntilTheirLossesAreTaken) {
  RT_SKIP_WITHOUT_GPU();
  EXPECT_EQ(reads_of_three_steps(Precision::bf16), 0);
  EXPECT_EQ(reads_of_three_steps(Precision::fp16), 3);  // the finite check, once a step
}

}  // namespace
}  // namespace ringtrain
