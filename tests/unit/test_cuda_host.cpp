// The host-side logic of the CUDA backend, tested without a GPU: the caching allocator and a
// captured step's pool, the
// choice of convolution algorithm, the fp16 loss scaler, NCHW/NHWC transposition, the
// mixed-precision ops every backend has (cast, finite check), and whether a GPU runs the
// architectures a build holds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/backend/cuda/architectures.hpp"
#include "ringtrain/backend/cuda/capture_pool.hpp"
#include "ringtrain/backend/cuda/conv_algo.hpp"
#include "ringtrain/core/block_cache.hpp"
#include "ringtrain/core/half.hpp"
#include "ringtrain/core/layout.hpp"
#include "ringtrain/optim/loss_scaler.hpp"
#include "test_util.hpp"

namespace ringtrain {
namespace {

// A raw allocator over malloc with a byte budget, counting what it is asked for.
struct BudgetAllocator {
  explicit BudgetAllocator(std::size_t bytes) : budget(bytes) {}
  std::size_t budget, used = 0;
  int frees = 0;
  std::map<void*, std::size_t> sizes;
  BlockCache make() {
    return BlockCache(
        [this](std::size_t n) -> void* {
          if (used + n > budget) return nullptr;
          used += n;
          void* p = std::malloc(n);
          sizes[p] = n;
          return p;
        },
        [this](void* p) {
          ++frees;
          used -= sizes.at(p);
          std::free(p);
        });
  }
};

TEST(BlockCache, RoundsSmallBlocksTo512AndLargeTo2MiB) {
  EXPECT_EQ(BlockCache::round(0), 512u);
  EXPECT_EQ(BlockCache::round(1), 512u);
  EXPECT_EQ(BlockCache::round(513), 1024u);
  EXPECT_EQ(BlockCache::round((1u << 20) - 1), 1u << 20);
  EXPECT_EQ(BlockCache::round(1u << 20), 2u << 20);
  EXPECT_EQ(BlockCache::round((2u << 20) + 1), 4u << 20);
}

TEST(BlockCache, SteadyStateStepsReachTheRawAllocatorOnlyOnce) {
  BudgetAllocator raw{std::size_t{1} << 30};
  BlockCache cache = raw.make();
  const std::size_t step_sizes[] = {1000, 5u << 20, 1000, 77, 3u << 20};
  for (int step = 0; step < 5; ++step) {
    std::vector<std::pair<void*, std::size_t>> live;
    for (std::size_t s : step_sizes) live.push_back({cache.allocate(s), s});
    for (auto& [p, s] : live) cache.release(p, s);
  }
  EXPECT_EQ(cache.raw_allocations(), 5u);
  EXPECT_EQ(cache.bytes_in_use(), 0u);
  EXPECT_GT(cache.bytes_cached(), 0u);
}

TEST(BlockCache, OutOfMemoryReleasesTheCacheAndRetries) {
  BudgetAllocator raw{4u << 20};
  BlockCache cache = raw.make();
  void* small = cache.allocate(2u << 20);
  cache.release(small, 2u << 20);  // cached: 2 MiB of the 4 MiB budget still taken
  void* big = cache.allocate(4u << 20);
  EXPECT_NE(big, nullptr);
  EXPECT_EQ(raw.frees, 1);
  EXPECT_EQ(cache.bytes_cached(), 0u);
  try {
    cache.allocate(2u << 20);
    FAIL() << "expected an out-of-memory error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot allocate 2097152 bytes (4194304 bytes in use"),
              std::string::npos)
        << e.what();
  }
  cache.release(big, 4u << 20);
}

// Inside a capture (may_release false) out of memory is an error at once: the cached blocks stay,
// since freeing one would break the capture.
TEST(BlockCache, OutOfMemoryInsideACaptureFreesNothing) {
  BudgetAllocator raw{4u << 20};
  BlockCache cache = raw.make();
  void* small = cache.allocate(2u << 20);
  cache.release(small, 2u << 20);
  EXPECT_NE(test::error_of([&] {
              cache.allocate(4u << 20, false);
            }).find("inside a captured step, where no cached block may be freed"),
            std::string::npos);
  EXPECT_EQ(raw.frees, 0);
  EXPECT_EQ(cache.bytes_cached(), 2u << 20);
}

ConvCandidate candidate(int algo, float ms, std::size_t ws, bool deterministic = true,
                        bool ok = true) {
  return {algo, 0, ok, ms, ws, deterministic};
}

// A captured step's memory: a block freed during the capture is handed out again within it
// (the capture needs what the eager step needed), every block stays the pool's after the
// capture, freed or not, so nothing allocated later is given an address the graph writes, and
// all of them go back to the cache with the pool.
TEST(CapturePool, HoldsEveryBlockOfTheCaptureUntilItIsDropped) {
  auto cache = std::make_shared<BlockCache>([](std::size_t n) { return std::malloc(n); },
                                            [](void* p) { std::free(p); });
  void* before = cache->allocate(1000);
  cache->release(before, 1000);
  {
    cuda::CapturePool pool(cache);
    void* a = pool.allocate(1000);
    EXPECT_EQ(a, before);  // the cache's free block
    pool.release(a, 1000);
    EXPECT_EQ(pool.allocate(900), a);  // reused within the capture, same rounded size
    void* b = pool.allocate(1000);
    EXPECT_NE(b, a);
    pool.close();
    pool.release(b, 1000);
    void* after = cache->allocate(1000);  // not a block of the capture, freed or not
    EXPECT_NE(after, a);
    EXPECT_NE(after, b);
    cache->release(after, 1000);
    EXPECT_EQ(pool.blocks(), 2u);
    EXPECT_EQ(cache->bytes_in_use(), 2 * BlockCache::round(1000));
  }
  EXPECT_EQ(cache->bytes_in_use(), 0u);
  EXPECT_EQ(cache->bytes_cached(), 3 * BlockCache::round(1000));
}

TEST(ConvAlgo, FastestThatFitsTheWorkspace) {
  const std::vector<ConvCandidate> c = {candidate(0, 3.0f, 0), candidate(1, 1.0f, 900),
                                        candidate(2, 2.0f, 100),
                                        candidate(3, 0.5f, 50, true, false)};
  EXPECT_EQ(pick_conv_algo(c, 1000, false)->algo, 1);
  EXPECT_EQ(pick_conv_algo(c, 500, false)->algo, 2);
  EXPECT_EQ(pick_conv_algo(c, 500, false)->workspace, 100u);
}

TEST(ConvAlgo, DeterministicOnlyWhenAsked) {
  const std::vector<ConvCandidate> c = {candidate(0, 3.0f, 0), candidate(1, 1.0f, 0, false)};
  EXPECT_EQ(pick_conv_algo(c, 0, false)->algo, 1);
  EXPECT_EQ(pick_conv_algo(c, 0, true)->algo, 0);
}

TEST(ConvAlgo, DeterministicTakesCudnnsOrderNotTheTimings) {
  // Heuristic results carry no meaningful time; two processes must choose alike.
  const std::vector<ConvCandidate> c = {candidate(4, 3.0f, 0, false), candidate(2, 9.0f, 5000),
                                        candidate(0, 2.0f, 10), candidate(1, 1.0f, 0)};
  EXPECT_EQ(pick_conv_algo(c, 1000, true)->algo, 0);
  EXPECT_EQ(pick_conv_algo(c, 1u << 20, true)->algo, 2);
  EXPECT_EQ(pick_conv_algo(c, 1u << 20, false)->algo, 1);
}

TEST(ConvAlgo, ChannelsToTryAreTheOwnThenTheNextMultiplesOfFourAndEight) {
  EXPECT_EQ(channels_to_try(3), (std::vector<int>{3, 4, 8}));
  EXPECT_EQ(channels_to_try(1), (std::vector<int>{1, 4, 8}));
  EXPECT_EQ(channels_to_try(4), (std::vector<int>{4, 8}));
  EXPECT_EQ(channels_to_try(5), (std::vector<int>{5, 8}));
  EXPECT_EQ(channels_to_try(8), (std::vector<int>{8}));
  EXPECT_EQ(channels_to_try(64), (std::vector<int>{64}));
}

TEST(ConvAlgo, PadsOnlyWhenTheProbeFindsNoAlgorithm) {
  std::vector<int> asked;
  const auto probe_with = [&asked](int supported_from) {
    return [&asked, supported_from](int c) {
      asked.push_back(c);
      return c >= supported_from;
    };
  };
  EXPECT_EQ(first_supported(channels_to_try(3), probe_with(1)), 3);
  EXPECT_EQ(asked, (std::vector<int>{3}));
  asked.clear();
  EXPECT_EQ(first_supported(channels_to_try(3), probe_with(8)), 8);
  EXPECT_EQ(asked, (std::vector<int>{3, 4, 8}));
  EXPECT_FALSE(first_supported(channels_to_try(3), probe_with(16)).has_value());
}

TEST(ConvAlgo, FallsBackToTheSmallestWorkspaceAndFailsOnlyWithoutAnyWorkingAlgorithm) {
  const std::vector<ConvCandidate> c = {candidate(0, 1.0f, 4096), candidate(1, 5.0f, 2048)};
  EXPECT_EQ(pick_conv_algo(c, 1024, false)->algo, 1);
  const std::vector<ConvCandidate> failed = {candidate(0, 1.0f, 0, true, false)};
  EXPECT_FALSE(pick_conv_algo(failed, 1u << 30, false).has_value());
  EXPECT_FALSE(pick_conv_algo({}, 1u << 30, false).has_value());
}

TEST(ConvAlgo, CacheKeysDifferByPassDtypeAndGeometry) {
  ConvGeometry g{8, 64, 32, 32, 64, 3, 3, 1, 1};
  ConvAlgoCache cache;
  cache[{g, DType::bf16, ConvPass::forward}] = {1, 0, 0};
  cache[{g, DType::bf16, ConvPass::backward_data}] = {2, 0, 0};
  cache[{g, DType::f32, ConvPass::forward}] = {3, 0, 0};
  ConvGeometry strided = g;
  strided.stride = 2;
  cache[{strided, DType::bf16, ConvPass::forward}] = {4, 0, 0};
  EXPECT_EQ(cache.size(), 4u);
  EXPECT_EQ((cache[{g, DType::bf16, ConvPass::forward}].algo), 1);
}

TEST(LossScaler, SkipsAndHalvesOnOverflowGrowsAfterCleanSteps) {
  LossScaler s(true, 1024.0, 3);
  EXPECT_FALSE(s.update(false));
  EXPECT_EQ(s.scale(), 512.0);
  EXPECT_TRUE(s.update(true));
  EXPECT_TRUE(s.update(true));
  EXPECT_EQ(s.scale(), 512.0);
  EXPECT_TRUE(s.update(true));
  EXPECT_EQ(s.scale(), 1024.0);
  EXPECT_TRUE(s.update(true));
  EXPECT_FALSE(s.update(false));  // an overflow restarts the count of clean steps
  EXPECT_TRUE(s.update(true));
  EXPECT_TRUE(s.update(true));
  EXPECT_EQ(s.scale(), 512.0);
  EXPECT_EQ(s.skipped_steps(), 2);
}

TEST(LossScaler, NeverBelowOneAndInertWhenDisabled) {
  LossScaler s(true, 2.0, 100);
  for (int i = 0; i < 5; ++i) s.update(false);
  EXPECT_EQ(s.scale(), 1.0);
  LossScaler off(false);
  EXPECT_EQ(off.scale(), 1.0);
  EXPECT_TRUE(off.update(false));
  EXPECT_EQ(off.skipped_steps(), 0);
}

TEST(Layout, NchwToNhwcPutsChannelsInnermostAndRoundTrips) {
  const Shape shape = {2, 3, 4, 5};
  Tensor nchw = Tensor::zeros(shape, DType::f32);
  for (int64_t i = 0; i < nchw.numel(); ++i) nchw.data<float>()[i] = static_cast<float>(i);
  Tensor nhwc = Tensor::zeros(shape, DType::f32, Layout::nhwc);
  convert_layout(nchw, nhwc);
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int h = 0; h < 4; ++h)
        for (int w = 0; w < 5; ++w)
          ASSERT_EQ(nhwc.data<float>()[((n * 4 + h) * 5 + w) * 3 + c],
                    nchw.data<float>()[((n * 3 + c) * 4 + h) * 5 + w]);
  Tensor back = Tensor::zeros(shape, DType::f32);
  convert_layout(nhwc, back);
  for (int64_t i = 0; i < back.numel(); ++i) ASSERT_EQ(back.data<float>()[i], float(i));
}

TEST(Layout, TwoByteElementsAndMismatchedShapes) {
  const Shape shape = {1, 2, 1, 3};
  Tensor nchw = Tensor::zeros(shape, DType::bf16);
  auto* in = static_cast<uint16_t*>(nchw.raw());
  for (int i = 0; i < 6; ++i) in[i] = float_to_bf16(static_cast<float>(i));
  Tensor nhwc = Tensor::zeros(shape, DType::bf16, Layout::nhwc);
  convert_layout(nchw, nhwc);
  const float expected[] = {0, 3, 1, 4, 2, 5};
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(bf16_to_float(static_cast<uint16_t*>(nhwc.raw())[i]), expected[i]);
  Tensor wrong = Tensor::zeros({1, 2, 3, 1}, DType::bf16, Layout::nhwc);
  EXPECT_THROW(convert_layout(nchw, wrong), Error);
}

TEST(CpuMixedOps, CastAndFiniteCheck) {
  CpuBackend backend(1);
  Tensor f = Tensor::zeros({3}, DType::f32);
  f.data<float>()[0] = 1.5f;
  f.data<float>()[1] = -2.25f;
  Tensor d = Tensor::zeros({3}, DType::f64);
  backend.cast(f, d);
  EXPECT_EQ(d.data<double>()[0], 1.5);
  EXPECT_EQ(d.data<double>()[1], -2.25);
  EXPECT_TRUE(backend.all_finite(f));
  f.data<float>()[2] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(backend.all_finite(f));
  f.data<float>()[2] = std::nanf("");
  EXPECT_FALSE(backend.all_finite(f));
}

TEST(CpuMixedOps, CopyTransposesBetweenLayouts) {
  CpuBackend backend(1);
  Tensor a = Tensor::zeros({1, 2, 1, 2}, DType::f32);
  for (int i = 0; i < 4; ++i) a.data<float>()[i] = float(i);
  Tensor b = Tensor::zeros({1, 2, 1, 2}, DType::f32, Layout::nhwc);
  backend.copy(a, b);
  const float expected[] = {0, 2, 1, 3};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(b.data<float>()[i], expected[i]);
}

// The CPU's twin of a device-to-host copy: a copy out of the memory a CPU backend's zeros()
// handed out (a view into it included) into any other counts as a read; into a CPU backend's
// memory (its own or a DataParallel replica's), or from the host, it does not.
TEST(CpuMixedOps, CopyOutOfTheBackendsMemoryCountsAsARead) {
  CpuBackend backend(1), replica(1);
  Tensor host = Tensor::zeros({8}, DType::f32);
  Tensor device = backend.zeros({8}, DType::f32), other = backend.zeros({8}, DType::f32);
  Tensor on_replica = replica.zeros({8}, DType::f32);
  const int64_t reads = backend.values_read();
  backend.copy(host, device);
  backend.copy(device, other);
  backend.copy(device, on_replica);
  replica.copy(device, on_replica);
  backend.copy_to_device_async(host, other);
  EXPECT_EQ(backend.values_read(), reads);
  EXPECT_EQ(replica.values_read(), 0);
  backend.copy(device, host);
  EXPECT_EQ(backend.values_read(), reads + 1);
  Tensor tail = Tensor::view(device.data<float>() + 4, {4}, DType::f32);
  Tensor host_tail = Tensor::zeros({4}, DType::f32);
  backend.copy(tail, host_tail);
  EXPECT_EQ(backend.values_read(), reads + 2);
  backend.copy(host_tail, tail);
  EXPECT_EQ(backend.values_read(), reads + 2);
  // A tensor may outlive its backend (freed under ASan in the sanitizer pass).
  const Tensor outlives = [] { return CpuBackend(1).zeros({4}, DType::f32); }();
  EXPECT_EQ(outlives.data<float>()[3], 0.0f);
}

// What a device start-up's query returns on each card, without the card.
const GpuIdentity t4{0, "Tesla T4", 7, 5};
const GpuIdentity a100{1, "NVIDIA A100-SXM4-80GB", 8, 0};
const GpuIdentity l40s{0, "NVIDIA L40S", 8, 9};
const GpuIdentity h100{0, "NVIDIA H100 80GB HBM3", 9, 0};
const GpuIdentity b200{0, "NVIDIA B200", 10, 0};
const GpuIdentity rtx5090{0, "NVIDIA GeForce RTX 5090", 12, 0};

KernelSource source(const GpuIdentity& gpu, std::string_view built) {
  return match_cuda_architecture(gpu, built).source;
}

TEST(CudaArchitectures, TheDefaultBuildRunsEveryFamilyCuda13Supports) {
  for (const GpuIdentity& gpu : {t4, a100, l40s, h100, b200, rtx5090})
    EXPECT_EQ(source(gpu, RINGTRAIN_CUDA_DEFAULT_ARCHITECTURES), KernelSource::machine_code)
        << gpu.name;
  // A later GPU than the build knows compiles the newest PTX.
  EXPECT_EQ(source({0, "future", 13, 0}, RINGTRAIN_CUDA_DEFAULT_ARCHITECTURES), KernelSource::ptx);
}

TEST(CudaArchitectures, MachineCodeRunsWithinItsMajorVersionAndPtxOnLaterGpus) {
  EXPECT_EQ(source(l40s, "80-real"), KernelSource::machine_code);
  EXPECT_EQ(source(a100, "86-real"), KernelSource::none);
  EXPECT_EQ(source(h100, "80-real"), KernelSource::none);
  EXPECT_EQ(source(h100, "80"), KernelSource::ptx);
  EXPECT_EQ(source(h100, "80-virtual;90-real"), KernelSource::machine_code);
  EXPECT_EQ(source(h100, "90a"), KernelSource::machine_code);
  EXPECT_EQ(source({0, "GH", 9, 1}, "90a"), KernelSource::none);
  EXPECT_EQ(source({0, "B300", 10, 3}, "100f-virtual"), KernelSource::ptx);
  EXPECT_EQ(source(rtx5090, "100f-virtual"), KernelSource::none);
}

TEST(CudaArchitectures, AGpuTheBuildCannotRunIsRefusedNamingCardBuildAndFlag) {
  // The build of a Hopper-only configuration on an A100: no kernel image for the card.
  const ArchitectureVerdict v = match_cuda_architecture(a100, "90");
  EXPECT_EQ(v.source, KernelSource::none);
  for (const char* part :
       {"GPU 1", "NVIDIA A100-SXM4-80GB", "compute capability 8.0",
        "machine code for 9.0; PTX for 9.0", "-DCMAKE_CUDA_ARCHITECTURES=80", "native"})
    EXPECT_NE(v.message.find(part), std::string::npos) << part << " in: " << v.message;
  EXPECT_THROW(require_cuda_architecture(a100, "90", 0), Error);
  EXPECT_NO_THROW(require_cuda_architecture(h100, "90", 0));
  EXPECT_NO_THROW(require_cuda_architecture(h100, "80", 0));  // PTX: a note, not an error
}

TEST(CudaArchitectures, TheNoteForPtxNamesThePtxAndTheFlagForMachineCode) {
  const ArchitectureVerdict v = match_cuda_architecture(l40s, "75;90-real");
  EXPECT_EQ(v.source, KernelSource::ptx);
  EXPECT_NE(v.message.find("from PTX 7.5"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("-DCMAKE_CUDA_ARCHITECTURES=89"), std::string::npos) << v.message;
}

TEST(CudaArchitectures, AnEntryThatIsNoComputeCapabilityIsAnError) {
  EXPECT_EQ(parse_cuda_architectures("75-real,80;;90-virtual").size(), 3u);
  EXPECT_THROW(parse_cuda_architectures("sm_90"), Error);
  EXPECT_THROW(parse_cuda_architectures("90-fake"), Error);
}

}  // namespace
}  // namespace ringtrain
