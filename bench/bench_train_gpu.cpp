// Steady-state training throughput on one GPU: images/s of full steps (forward, loss, backward,
// SGD) with the batch already on the device, and the same with the real loader (worker threads
// augmenting into pinned slots, copies on the copy stream) feeding it, and with the loader
// gathering uint8 images that the GPU augments (--augment-on device); plus achieved TFLOP/s and
// MFU against the device's dense 16-bit peak; and the stem convolution with its 3 input
// channels against 4 and 8 (the real images, zero-padded), to tell whether padding the input pays
// on this cuDNN. The on-device steps run eagerly and replayed from a CUDA graph (--cuda-graph),
// in interleaved rounds. Needs a GPU; says so and exits 2 without one.
//   build/bench/bench_train_gpu --depth 50 --batch-size 256 --amp bf16 --workers 8
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "ringtrain/backend/cuda/cuda_backend.hpp"
#include "ringtrain/backend/devices.hpp"
#include "ringtrain/data/synthetic.hpp"
#include "ringtrain/loader/device_prefetcher.hpp"
#include "ringtrain/loader/loader.hpp"
#include "ringtrain/nn/forward_backward.hpp"
#include "ringtrain/optim/sgd.hpp"
#include "ringtrain/prof/report.hpp"
#include "ringtrain/run/step_graph.hpp"
#include "ringtrain/run_config/config.hpp"
#include "timing.hpp"

using namespace ringtrain;
using bench::Clock;
using bench::seconds_since;

namespace {

// One training step as the trainer runs it: the loss stays in the device's loss log and
// nothing is read back, so steps queue up on the GPU while the host issues the next.
void step(ResNet& model, Backend& backend, Sgd& sgd, const Tensor& images, const Tensor& labels) {
  model.parameters().zero_grad(backend);
  record_forward_backward(model, images, labels, LossSettings{});
  sgd.step(0.01f);
}

// Reads the losses of the steps issued so far, which waits for them to finish: the end of a
// timed span. A loss that is not finite ends the benchmark (a diverged model measures nothing).
void finish_steps(Backend& backend) {
  for (const LossValue& v : backend.take_losses())
    RT_CHECK(std::isfinite(v.loss), "bench_train_gpu: a step's loss is ", v.loss);
}

// Images/s of `steps` on-device steps, each issued by `issue` (eager, or replayed from a CUDA
// graph), after `warmup` untimed ones.
double on_device_rate(Backend& backend, int warmup, int steps, int batch,
                      const std::function<void()>& issue) {
  for (int s = 0; s < warmup; ++s) issue();
  finish_steps(backend);
  const auto t0 = Clock::now();
  for (int s = 0; s < steps; ++s) issue();
  finish_steps(backend);
  return double(steps) * batch / seconds_since(t0);
}

// Images/s of `steps` steps fed by the prefetcher, after `warmup` untimed ones.
double loader_rate(ResNet& model, Backend& backend, Sgd& sgd, DevicePrefetcher& prefetcher,
                   int warmup, int steps, int batch) {
  int64_t epoch = 1, done = 0;
  prefetcher.start_epoch(epoch);
  auto t0 = Clock::now();
  while (done < warmup + steps) {
    const DeviceBatch* b = prefetcher.next();
    if (!b) {
      prefetcher.start_epoch(++epoch);
      continue;
    }
    if (done == warmup) {
      finish_steps(backend);
      t0 = Clock::now();
    }
    step(model, backend, sgd, b->images, b->labels);
    ++done;
  }
  finish_steps(backend);
  return double(steps) * batch / seconds_since(t0);
}

// The real images (a [N,3,H,W] device batch) with zero channels after the third, up to
// `channels`.
Tensor stem_input(Backend& backend, const Tensor& images, int channels) {
  const Shape& s = images.shape();
  Tensor host = Tensor::zeros(s, images.dtype());
  backend.copy(images, host);
  Tensor padded = Tensor::zeros({s[0], channels, s[2], s[3]}, images.dtype());
  const std::size_t plane = static_cast<std::size_t>(s[2] * s[3]) * dtype_size(images.dtype());
  for (int64_t n = 0; n < s[0]; ++n)
    std::memcpy(static_cast<char*>(padded.raw()) + n * channels * plane,
                static_cast<const char*>(host.raw()) + n * s[1] * plane, s[1] * plane);
  Tensor dev = backend.zeros(padded.shape(), images.dtype());
  backend.copy(padded, dev);
  return dev;
}

// He-initialised weights of `shape` in the compute dtype.
Tensor random_weights(Backend& backend, const Shape& shape) {
  std::mt19937_64 rng(1);
  std::normal_distribution<float> dist(0.0f, std::sqrt(2.0f / (shape[1] * shape[2] * shape[3])));
  Tensor host = Tensor::zeros(shape, DType::f32);
  for (int64_t i = 0; i < host.numel(); ++i) host.data<float>()[i] = dist(rng);
  Tensor f32 = backend.zeros(shape, DType::f32), w = backend.zeros(shape, backend.compute_dtype());
  backend.copy(host, f32);
  backend.cast(f32, w);
  return w;
}

// Median milliseconds of the cifar stem's forward and weight-gradient passes (3x3, 64 filters,
// stride 1) on the real images at `channels` input channels (zero-padded beyond 3): what
// padding the input to 4 or 8 would buy.
std::pair<double, double> stem_conv_ms(Backend& backend, const Tensor& images, int channels) {
  const ConvGeometry g{static_cast<int>(images.dim(0)),
                       channels,
                       static_cast<int>(images.dim(2)),
                       static_cast<int>(images.dim(3)),
                       64,
                       3,
                       3,
                       1,
                       1};
  const DType t = backend.compute_dtype();
  Tensor x = stem_input(backend, images, channels),
         w = random_weights(backend, {g.k, g.c, g.r, g.s});
  Tensor y = backend.zeros({g.n, g.k, g.p(), g.q()}, t), dw = backend.zeros(w.shape(), t);
  auto median_ms = [&](auto&& pass) {
    pass();  // the algorithm search
    std::vector<double> times;
    for (int i = 0; i < 20; ++i) {
      backend.synchronize();
      const auto t0 = Clock::now();
      pass();
      backend.synchronize();
      times.push_back(1e3 * seconds_since(t0));
    }
    return bench::median(times);
  };
  return {median_ms([&] { backend.conv_forward(g, x, w, y); }),
          median_ms([&] { backend.conv_backward_filter(g, x, y, dw); })};
}

}  // namespace

int main(int argc, char** argv) {
  ResNetConfig mc;
  int batch = 256, steps = 50, warmup = 10, workers = 8, train_images = 20000, rounds = 3;
  std::string amp = "bf16", conv_algo_cache;
  double peak = 0;
  CLI::App app{"GPU training-step benchmark"};
  app.add_option("--depth", mc.depth)->capture_default_str();
  app.add_option("--width", mc.width)->capture_default_str();
  app.add_option("--batch-size", batch)->capture_default_str();
  app.add_option("--steps", steps, "timed steps")->capture_default_str();
  app.add_option("--warmup", warmup, "untimed steps first")->capture_default_str();
  app.add_option("--rounds", rounds,
                 "on-device rounds, eager and CUDA graph interleaved; the medians are reported")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_option("--amp", amp, "bf16, fp16 or off")->capture_default_str();
  app.add_option("--workers", workers, "loader threads for the real-loader run")
      ->capture_default_str();
  app.add_option("--train-images", train_images, "synthetic images the loader draws from")
      ->capture_default_str();
  app.add_option("--peak-tflops", peak, "device peak for MFU (default: by device name)");
  app.add_option("--conv-algo-cache", conv_algo_cache,
                 "the file that keeps cuDNN's algorithm searches (default: none)");
  CLI11_PARSE(app, argc, argv);

  const DeviceInventory devices = probe_devices();
  if (devices.cuda_devices == 0) {
    std::fprintf(stderr, "bench_train_gpu: no GPU: %s\n", devices.why_none.c_str());
    return 2;
  }
  CudaOptions o;
  o.compute = compute_dtype(parse<Precision>("--amp", amp));
  o.conv_algo_cache = conv_algo_cache;
  auto backend = make_cuda_backend(o);
  const std::string name = backend->name();
  if (peak <= 0) peak = peak_tflops(name);

  ResNet model(mc, *backend, DType::f32, 0);
  Sgd sgd(model.parameters(), *backend, OptimizerConfig{});
  const double gflop_per_image = 6.0 * model.macs_per_image(32, 32) * 1e-9;

  SynthConfig sc;
  sc.train_count = train_images;
  sc.test_count = 16;
  const Dataset data = make_synthetic(sc);
  const Normalization norm = channel_statistics(data.train);
  const ImageTransform writer(data.train, norm, 4, o.compute, Layout::nhwc);
  LoaderConfig lc;
  lc.batch_size = batch;
  lc.workers = workers;
  lc.persistent_workers = true;
  Loader loader(data.train, writer,
                DistributedSampler(data.train.count, 1, 0, true, ShardTail::drop, 0), lc, *backend);
  DevicePrefetcher prefetcher(loader, *backend);
  // The same loader gathering raw uint8 images, augmented by the GPU after the copy.
  const ImageTransform raw_writer(data.train, norm, 4, DType::u8, Layout::nhwc);
  Loader raw_loader(data.train, raw_writer,
                    DistributedSampler(data.train.count, 1, 0, true, ShardTail::drop, 0), lc,
                    *backend);
  const DeviceAugment augment = make_device_augment(norm, 4, *backend);
  DevicePrefetcher raw_prefetcher(raw_loader, *backend, nullptr, augment);

  // On-device data: the first loader batch, copied once.
  prefetcher.start_epoch(0);
  const DeviceBatch* first = prefetcher.next();
  Tensor images = backend->zeros(first->images.shape(), o.compute);
  Tensor labels = backend->zeros(first->labels.shape(), DType::i32);
  backend->copy(first->images, images);
  backend->copy(first->labels, labels);
  // Eager steps and the same steps replayed from a CUDA graph (--cuda-graph), round by round.
  const DeviceBatch on_device_batch{images, labels};
  StepProfiler untimed(*backend, ProfileMode::off);
  StepGraph graph(*backend);
  const auto eager = [&] { step(model, *backend, sgd, images, labels); };
  const auto replayed = [&] {
    sgd.prepare(0.01f);
    graph.run(on_device_batch, untimed, [&](const DeviceBatch& in, StepProfiler*) {
      model.parameters().zero_grad(*backend);
      record_forward_backward(model, in.images, in.labels, LossSettings{});
      sgd.update();
    });
  };
  std::vector<double> eager_rates, graph_rates;
  for (int r = 0; r < rounds; ++r) {
    eager_rates.push_back(on_device_rate(*backend, warmup, steps, batch, eager));
    graph_rates.push_back(on_device_rate(*backend, warmup, steps, batch, replayed));
  }
  const double on_device = bench::median(eager_rates);
  const double on_graph = bench::median(graph_rates);

  // The real loader: batches assembled by the workers, copied while the previous step computes;
  // then the same with the augmentation on the GPU.
  const double with_loader = loader_rate(model, *backend, sgd, prefetcher, warmup, steps, batch);
  const double augment_on_device =
      loader_rate(model, *backend, sgd, raw_prefetcher, warmup, steps, batch);

  std::printf("device: %s; resnet%d-cifar width %.2f, batch %d, %s\n", name.c_str(), mc.depth,
              mc.width, batch, dtype_name(o.compute).c_str());
  for (const auto& [label, rate] : {std::pair<const char*, double>{"on-device data", on_device},
                                    {"on-device, graph", on_graph},
                                    {"real loader", with_loader},
                                    {"loader, GPU aug", augment_on_device}}) {
    const double tflops = rate * gflop_per_image * 1e-3;
    std::printf("%-16s %10.0f img/s  %7.1f TFLOP/s  MFU %s\n", label, rate, tflops,
                peak > 0 ? str_cat(100 * tflops / peak, "%").c_str() : "n/a (unknown peak)");
  }
  std::printf("CUDA graph / eager, on-device: %.3f (medians of %d interleaved rounds)\n",
              on_graph / on_device, rounds);
  std::printf("loader / on-device: %.3f (%d workers)\n", with_loader / on_device, workers);
  std::printf("loader with GPU augmentation / on-device: %.3f\n", augment_on_device / on_device);
  const double step_ms = 1e3 * batch / on_device;
  for (int channels : {3, 4, 8}) {
    const auto [forward, filter] = stem_conv_ms(*backend, images, channels);
    std::printf("stem conv C=%d: forward %.3f ms, weight gradient %.3f ms (%.1f%% of a step)\n",
                channels, forward, filter, 100 * (forward + filter) / step_ms);
  }
  return 0;
}
