// The verdict of `ringtrain diagnose` on constructed probe results, one case per bottleneck.
#include <gtest/gtest.h>

#include "ringtrain/run/diagnose.hpp"

namespace ringtrain {
namespace {

// A healthy run: the loader outruns compute, no waiting, the full step close to compute.
ProbeResults healthy() {
  ProbeResults p;
  p.workers = 2;
  p.loader_images_per_s = 20000;
  p.compute_images_per_s = 5000;
  p.backward_s = 0.1;
  p.allreduce_s = 0.01;
  p.step_images_per_s = 4800;
  p.step_shares[static_cast<int>(Phase::forward)] = 0.3;
  p.step_shares[static_cast<int>(Phase::backward)] = 0.65;
  p.step_shares[static_cast<int>(Phase::optimizer)] = 0.05;
  return p;
}

bool advises(const Verdict& v, const std::string& text) {
  for (const std::string& a : v.advice)
    if (a.find(text) != std::string::npos) return true;
  return false;
}

TEST(Diagnose, HealthyRunIsComputeBound) {
  EXPECT_EQ(judge(healthy()).bound, "compute-bound");
}

TEST(Diagnose, SlowLoaderIsDataBoundWithAWorkerCount) {
  ProbeResults p = healthy();
  p.loader_images_per_s = 1000;  // 500 per worker; 1.25 x 5000 needs 13 workers
  const Verdict v = judge(p);
  EXPECT_EQ(v.bound, "data-bound");
  EXPECT_TRUE(advises(v, "--workers 13")) << v.advice.front();
  EXPECT_NE(v.reason.find("1000 img/s with 2 worker(s), compute consumes 5000 img/s"),
            std::string::npos)
      << v.reason;
}

TEST(Diagnose, DataBoundAdvisesAugmentingOnTheDeviceUnlessAlreadyThere) {
  ProbeResults p = healthy();
  p.loader_images_per_s = 1000;
  EXPECT_TRUE(advises(judge(p), "--augment-on device"));
  p.augment_on_device = true;
  EXPECT_FALSE(advises(judge(p), "--augment-on device"));
  EXPECT_FALSE(advises(judge(healthy()), "--augment-on device"));
}

TEST(Diagnose, WaitingForDataInTheFullStepIsDataBoundToo) {
  ProbeResults p = healthy();
  p.step_shares[static_cast<int>(Phase::data)] = 0.2;
  EXPECT_EQ(judge(p).bound, "data-bound");
}

TEST(Diagnose, SlowAllReduceIsCommunicationBound) {
  ProbeResults p = healthy();
  p.allreduce_s = 0.2;  // twice the backward pass: it cannot hide
  EXPECT_EQ(judge(p).bound, "communication-bound");
  p = healthy();
  p.step_shares[static_cast<int>(Phase::comm_wait)] = 0.3;
  const Verdict v = judge(p);
  EXPECT_EQ(v.bound, "communication-bound");
  EXPECT_TRUE(advises(v, "--bucket-cap-mb"));
}

TEST(Diagnose, FullStepFarBelowItsPartsIsSynchronisationBound) {
  ProbeResults p = healthy();
  p.step_images_per_s = 3000;
  EXPECT_EQ(judge(p).bound, "synchronisation-bound");
}

// A healthy-looking run whose GPU idles 30% of the time is held back by the host, not by its
// compute; measured busy, or not measured (the CPU), it stays compute-bound.
TEST(Diagnose, IdleGpuWithNoWaitingIsHostBound) {
  ProbeResults p = healthy();
  p.gpu_util_percent = 70;
  const Verdict v = judge(p);
  EXPECT_EQ(v.bound, "host-bound");
  EXPECT_NE(v.reason.find("busy 70%"), std::string::npos) << v.reason;
  EXPECT_TRUE(advises(v, "--batch-size"));
  p.gpu_util_percent = 99;
  EXPECT_EQ(judge(p).bound, "compute-bound");
  p.gpu_util_percent = -1;
  EXPECT_EQ(judge(p).bound, "compute-bound");
  p = healthy();
  p.gpu_util_percent = 70;
  p.loader_images_per_s = 1000;  // waiting for data explains the idle GPU
  EXPECT_EQ(judge(p).bound, "data-bound");
}

TEST(Diagnose, SuggestedWorkers) {
  EXPECT_EQ(suggested_workers(0, 1000, 1000), 2);  // the training thread counts as one
  EXPECT_EQ(suggested_workers(4, 4000, 1000), 2);
  EXPECT_EQ(suggested_workers(2, 1000, 5000), 13);
}

TEST(Diagnose, ReportNamesEveryProbe) {
  ProbeResults p = healthy();
  const std::string text = format_diagnosis(p, judge(p));
  for (const char* s : {"loader alone (2 workers)", "compute alone", "all-reduce of gradients",
                        "full training step", "verdict: compute-bound", "what would help"})
    EXPECT_NE(text.find(s), std::string::npos) << s << "\n" << text;
}

}  // namespace
}  // namespace ringtrain
