// What --profile trace records on the host besides the phases: one span per batch on the lane
// of the loader thread that assembled it, and one span per DDP bucket and step from its launch
// to the return of its wait.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/data/synthetic.hpp"
#include "ringtrain/loader/loader.hpp"
#include "ringtrain/nn/linear.hpp"
#include "ringtrain/parallel/ddp.hpp"

namespace ringtrain {
namespace {

constexpr double kAssembleDelay = 2e-3;  // each batch takes at least this long to assemble

struct LoaderRun {
  int workers = 2;
  bool persistent = false;
  bool traced = true;
  int epochs = 2;
  int64_t abandon_after = -1;  // the first epoch ends after this many batches (-1: never)
};

// 100 images in batches of 10: ten batches per epoch.
std::vector<BatchLane> loader_lanes(const LoaderRun& run) {
  SynthConfig sc;
  sc.train_count = 100;
  sc.test_count = 2;
  sc.height = sc.width = 8;
  const Dataset d = make_synthetic(sc);
  CpuBackend backend(1);
  const ImageTransform writer(d.train, channel_statistics(d.train), 4, DType::f32, Layout::nchw);
  LoaderConfig c;
  c.batch_size = 10;
  c.workers = run.workers;
  c.persistent_workers = run.persistent;
  c.debug_delay_s = kAssembleDelay;
  Loader loader(d.train, writer, DistributedSampler(d.train.count, 1, 0, true, ShardTail::drop, 0),
                c, backend);
  const HostClock clock;
  if (run.traced) loader.trace_batches(clock);
  for (int epoch = 0; epoch < run.epochs; ++epoch) {
    loader.start_epoch(epoch);
    int64_t taken = 0;
    while ((epoch > 0 || taken != run.abandon_after) && loader.next()) ++taken;
  }
  return loader.batch_lanes();
}

// Every span of a lane lasts at least the assembly delay and ends before the lane's next one
// starts, and the lane holds the batches in the order they were handed out.
void expect_sequential(const BatchLane& lane) {
  for (size_t i = 0; i < lane.spans.size(); ++i) {
    const BatchSpan& s = lane.spans[i];
    EXPECT_GE(s.start_s, 0.0);
    EXPECT_GE(s.duration_s, kAssembleDelay) << "batch " << s.batch;
    EXPECT_EQ(s.images, 10);
    if (i == 0) continue;
    const BatchSpan& before = lane.spans[i - 1];
    EXPECT_LE(before.start_s + before.duration_s, s.start_s)
        << "worker " << lane.worker << ": batch " << s.batch << " overlaps batch " << before.batch;
    EXPECT_LT(std::make_pair(before.epoch, before.batch), std::make_pair(s.epoch, s.batch));
  }
}

TEST(LoaderTrace, EveryBatchOnceOnTheLaneOfTheWorkerThatBuiltIt) {
  for (bool persistent : {false, true}) {
    const std::vector<BatchLane> lanes = loader_lanes({2, persistent, true, 2, -1});
    ASSERT_EQ(lanes.size(), 2u);
    std::set<std::pair<int64_t, int64_t>> seen;
    for (int w = 0; w < 2; ++w) {
      const BatchLane& lane = lanes[static_cast<size_t>(w)];
      EXPECT_EQ(lane.worker, w);
      EXPECT_EQ(lane.spans.size(), 10u);  // its five batches of each epoch
      for (const BatchSpan& s : lane.spans) {
        EXPECT_EQ(s.batch % 2, w) << "batch " << s.batch << " on worker " << w << "'s lane";
        seen.insert({s.epoch, s.batch});
      }
      expect_sequential(lane);
    }
    EXPECT_EQ(seen.size(), 20u) << "persistent " << persistent;
  }
}

TEST(LoaderTrace, SynchronousAssemblyHasOneLane) {
  const std::vector<BatchLane> lanes = loader_lanes({0, false, true, 2, -1});
  ASSERT_EQ(lanes.size(), 1u);
  EXPECT_EQ(lanes[0].worker, BatchLane::kSynchronous);
  ASSERT_EQ(lanes[0].spans.size(), 20u);
  EXPECT_EQ(lanes[0].spans[13].epoch, 1);
  EXPECT_EQ(lanes[0].spans[13].batch, 3);
  expect_sequential(lanes[0]);
}

// An epoch abandoned after three batches: only the batches handed out are on the lanes.
TEST(LoaderTrace, AbandonedEpochKeepsTheBatchesTaken) {
  const std::vector<BatchLane> lanes = loader_lanes({3, true, true, 2, 3});
  ASSERT_EQ(lanes.size(), 3u);
  size_t spans = 0;
  for (const BatchLane& lane : lanes) {
    spans += lane.spans.size();
    expect_sequential(lane);
  }
  EXPECT_EQ(spans, 13u);
}

TEST(LoaderTrace, NothingWithoutTracing) {
  EXPECT_TRUE(loader_lanes({2, false, false, 1, -1}).empty());
}

// One rank: every all-reduce is complete when launched, and each wait takes a millisecond.
class OneRank final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string name() const override { return "one rank"; }
  CommHandle all_reduce_async(Tensor&, int64_t, int64_t, ReduceOp) override { return ++launched; }
  void wait(CommHandle) override { std::this_thread::sleep_for(std::chrono::milliseconds(1)); }
  void progress() override {}
  void broadcast(Tensor&, int) override {}
  void barrier() override {}
  void all_reduce_host(double*, int, ReduceOp) override {}
  int64_t launched = 0;
};

// Three layers cut into several small buckets.
struct ThreeLayers {
  ParameterSet params;
  Linear a, b, c;
  explicit ThreeLayers(Backend& backend)
      : a(params, "a", 8, 16), b(params, "b", 16, 16), c(params, "c", 16, 4) {
    params.allocate(backend, DType::f32);
  }
};

struct DdpRun {
  std::vector<AllReduceSpan> spans;
  size_t buckets = 0;
  int64_t gradient_bytes = 0;
};

// `steps` steps of `micro` micro-batches, phases and backward as the trainer runs them.
DdpRun ddp_run(ProfileMode mode, int steps, int micro) {
  CpuBackend backend(1);
  ThreeLayers net(backend);
  OneRank comm;
  DdpConfig dc;
  dc.bucket_cap_mb = dc.first_bucket_mb = 0.0005;  // 500 bytes
  DistributedDataParallel ddp(net.params, comm, backend, dc);
  StepProfiler profiler(backend, mode);
  ddp.trace_buckets(&profiler);
  const int params = static_cast<int>(net.params.param_infos().size());
  for (int step = 0; step < steps; ++step)
    for (int m = 0; m < micro; ++m) {
      ddp.set_sync(m + 1 == micro);
      profiler.start(Phase::backward);
      for (int id = params; id-- > 0;) net.params.gradient_written(id);
      profiler.start(Phase::comm_wait);
      ddp.finish_gradients();
      if (m + 1 == micro) profiler.end_step();
    }
  EXPECT_EQ(comm.launched, static_cast<int64_t>(ddp.buckets().size()) * steps);
  return {ddp.traced(), ddp.buckets().size(),
          static_cast<int64_t>(net.params.flat_grads().nbytes())};
}

TEST(DdpTrace, EveryBucketOfEveryStepFromLaunchToTheEndOfItsWait) {
  for (int micro : {1, 2}) {  // micro-batches without sync communicate nothing
    const DdpRun run = ddp_run(ProfileMode::trace, 3, micro);
    ASSERT_GE(run.buckets, 3u);
    ASSERT_EQ(run.spans.size(), 3 * run.buckets);
    ASSERT_GE(run.gradient_bytes, (16 * 8 + 16 + 16 * 16 + 16 + 4 * 16 + 4) * 4);
    for (int64_t step = 0; step < 3; ++step) {
      std::set<int> ids;
      int64_t bytes = 0;
      int params = 0;
      for (const AllReduceSpan& s : run.spans) {
        if (s.step != step) continue;
        ids.insert(s.bucket);
        bytes += s.bytes;
        params += s.params;
        EXPECT_TRUE(s.during_backward);
        EXPECT_LE(s.launch_s, s.wait_s);
        EXPECT_GE(s.done_s - s.wait_s, 1e-3);  // the wait's millisecond
      }
      EXPECT_EQ(ids.size(), run.buckets) << "step " << step;
      EXPECT_EQ(*ids.rbegin(), static_cast<int>(run.buckets) - 1);
      EXPECT_EQ(bytes, run.gradient_bytes) << "step " << step;
      EXPECT_EQ(params, 6);
    }
  }
}

TEST(DdpTrace, NothingOutsideTraceMode) {
  const DdpRun run = ddp_run(ProfileMode::summary, 2, 1);
  EXPECT_TRUE(run.spans.empty());
  EXPECT_GE(run.buckets, 3u);
}

}  // namespace
}  // namespace ringtrain
