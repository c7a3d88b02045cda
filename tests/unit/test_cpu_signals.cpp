// The CPU backend's arithmetic while signals keep arriving, as during a stop signal, a Slurm
// warning or a sampling profiler. oneDNN's JIT GEMM kernels point the stack pointer at a heap
// workspace; a signal frame pushed there overwrote the heap, and a run stopped by SIGUSR1 died
// with "corrupted size vs. prev_size" instead of writing its checkpoint.
#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <csignal>
#include <thread>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "test_util.hpp"

namespace ringtrain {
namespace {

using test::random_tensor;

std::atomic<long> handled{0};
extern "C" void count_signal(int) {
  handled.fetch_add(1);
}

// Sends SIGUSR2 to one thread every few microseconds while it lives.
class SignalStorm {
 public:
  explicit SignalStorm(pthread_t target) {
    struct sigaction action {};
    action.sa_handler = count_signal;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    EXPECT_EQ(sigaction(SIGUSR2, &action, &previous_), 0);
    sender_ = std::thread([this, target] {
      while (!done_.load()) {
        pthread_kill(target, SIGUSR2);
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    });
  }
  ~SignalStorm() {
    done_.store(true);
    sender_.join();
    sigaction(SIGUSR2, &previous_, nullptr);
  }

 private:
  struct sigaction previous_ {};
  std::atomic<bool> done_{false};
  std::thread sender_;
};

struct ConvOutputs {
  Tensor y, dx, dw, logits, dlinear_x, dlinear_w, dlinear_b;
};

// One layer's three convolution passes and the classifier's, in f32 (oneDNN's path).
ConvOutputs run_layer(CpuBackend& backend, const ConvGeometry& g, const Tensor& x, const Tensor& w,
                      const Tensor& dy, const Tensor& fc_w, const Tensor& fc_b) {
  ConvOutputs out{Tensor::zeros({g.n, g.k, g.p(), g.q()}, DType::f32),
                  Tensor::zeros(x.shape(), DType::f32),
                  Tensor::zeros(w.shape(), DType::f32),
                  Tensor::zeros({g.n, fc_w.shape()[0]}, DType::f32),
                  Tensor::zeros({g.n, fc_w.shape()[1]}, DType::f32),
                  Tensor::zeros(fc_w.shape(), DType::f32),
                  Tensor::zeros(fc_b.shape(), DType::f32)};
  backend.conv_forward(g, x, w, out.y);
  backend.conv_backward_data(g, dy, w, out.dx);
  backend.conv_backward_filter(g, x, dy, out.dw);
  const Tensor features = x.reshaped({g.n, g.c * g.h * g.w});
  backend.linear_forward(features, fc_w, fc_b, out.logits);
  backend.linear_backward(features, fc_w, out.logits, &out.dlinear_x, out.dlinear_w, out.dlinear_b);
  return out;
}

void expect_same(const Tensor& a, const Tensor& b, const char* what) {
  ASSERT_EQ(a.numel(), b.numel()) << what;
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  for (int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(pa[i], pb[i]) << what << " element " << i;
}

// With one thread every kernel runs on the thread the signals go to; with two, that thread runs
// half of each convolution's batch and the pool's worker the other half.
class CpuSignals : public ::testing::TestWithParam<int> {};

TEST_P(CpuSignals, ConvolutionAndClassifierUnchangedBySignalStorm) {
  ConvGeometry g;
  g.n = 8, g.c = 24, g.h = g.w = 12, g.k = 40, g.r = g.s = 3, g.stride = 1, g.pad = 1;
  std::mt19937_64 rng(3);
  const Tensor x = random_tensor<float>({g.n, g.c, g.h, g.w}, rng);
  const Tensor w = random_tensor<float>({g.k, g.c, g.r, g.s}, rng);
  const Tensor dy = random_tensor<float>({g.n, g.k, g.p(), g.q()}, rng);
  const Tensor fc_w = random_tensor<float>({10, g.c * g.h * g.w}, rng);
  const Tensor fc_b = random_tensor<float>({10}, rng);
  CpuBackend backend(GetParam());
  const ConvOutputs quiet = run_layer(backend, g, x, w, dy, fc_w, fc_b);

  const long before = handled.load();
  SignalStorm storm(pthread_self());
  for (int round = 0; round < 200; ++round) {
    const ConvOutputs noisy = run_layer(backend, g, x, w, dy, fc_w, fc_b);
    expect_same(noisy.y, quiet.y, "conv forward");
    expect_same(noisy.dx, quiet.dx, "conv backward data");
    expect_same(noisy.dw, quiet.dw, "conv backward filter");
    expect_same(noisy.logits, quiet.logits, "linear forward");
    expect_same(noisy.dlinear_w, quiet.dlinear_w, "linear backward weights");
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(handled.load() - before, 100) << "the storm should have interrupted the GEMMs";
}

INSTANTIATE_TEST_SUITE_P(Threads, CpuSignals, ::testing::Values(1, 2));

}  // namespace
}  // namespace ringtrain
