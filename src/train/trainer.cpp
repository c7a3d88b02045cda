#include "ringtrain/train/trainer.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/data/device_prefetcher.hpp"
#include "ringtrain/data/hdf5_io.hpp"
#include "ringtrain/data/sampler.hpp"
#include "ringtrain/data/synthetic.hpp"
#include "ringtrain/optim/lr_schedule.hpp"
#include "ringtrain/optim/sgd.hpp"

namespace ringtrain {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

Dataset load_data(const TrainConfig& c) {
  if (!c.data.empty()) return read_hdf5_dataset(c.data);
  if (!std::filesystem::exists(c.synth_path)) {
    spdlog::info("no --data given: writing the synthetic dataset {}", c.synth_path);
    const auto dir = std::filesystem::path(c.synth_path).parent_path();
    if (!dir.empty()) std::filesystem::create_directories(dir);
    write_hdf5_dataset(c.synth_path, make_synthetic(SynthConfig{}));
  }
  spdlog::info("no --data given: using the synthetic dataset {}", c.synth_path);
  return read_hdf5_dataset(c.synth_path);
}

struct Evaluation {
  double loss = 0, accuracy = 0;
};

// Every test sample exactly once (uneven shards, last partial batch kept), no augmentation.
Evaluation evaluate(ResNet& model, Backend& backend, DevicePrefetcher& batches, int64_t count) {
  double loss_sum = 0;
  int64_t correct = 0, seen = 0;
  batches.start_epoch(0);
  while (const DeviceBatch* b = batches.next()) {
    const int64_t n = b->images.dim(0);
    const Tensor& logits = model.forward(b->images, false);
    loss_sum += backend.softmax_cross_entropy(logits, b->labels, 0.0f, nullptr) * n;
    correct += backend.count_correct(logits, b->labels);
    seen += n;
  }
  RT_CHECK(seen == count, "evaluate: saw ", seen, " test samples, expected ", count);
  return {loss_sum / count, static_cast<double>(correct) / count};
}

LoaderConfig loader_config(const TrainConfig& c, bool training) {
  LoaderConfig l;
  l.batch_size = training ? c.batch_size : c.eval_batch_size;
  l.workers = c.workers;
  l.prefetch_factor = c.prefetch_factor;
  l.persistent_workers = c.persistent_workers;
  l.augment = training && c.augment;
  l.shuffle = training;
  l.drop_last = training;
  l.seed = c.seed;
  return l;
}

std::string format_duration(double s) {
  const int64_t t = static_cast<int64_t>(s);
  return t >= 60 ? str_cat(t / 60, "m", t % 60, "s") : str_cat(t, "s");
}

void write_metrics(std::ofstream& out, const EpochMetrics& m) {
  nlohmann::json j = {{"epoch", m.epoch},
                      {"step", m.step},
                      {"train_loss", m.train_loss},
                      {"train_accuracy", m.train_accuracy},
                      {"test_loss", m.test_loss},
                      {"test_accuracy", m.test_accuracy},
                      {"lr", m.lr},
                      {"epoch_time_s", m.epoch_time_s},
                      {"images_per_s", m.images_per_s}};
  out << j.dump() << "\n";
  out.flush();
}

}  // namespace

TrainResult train(const TrainConfig& config) {
  config.validate();
  const Dataset data = load_data(config);
  ResNetConfig mc = config.model;
  mc.in_channels = data.train.channels;
  mc.classes = data.classes();

  CpuBackend backend(config.threads);
  ResNet model(mc, backend, DType::f32, config.seed);
  Sgd sgd(
      model.parameters(), backend,
      SgdConfig{config.momentum, config.weight_decay, config.nesterov, config.decay_norm_and_bias});
  DistributedSampler sampler(data.train.count, 1, 0, true, ShardTail::drop, config.seed);
  const int64_t steps_per_epoch = sampler.per_rank() / config.batch_size;
  RT_CHECK(steps_per_epoch > 0, "train: --batch-size ", config.batch_size, " is larger than the ",
           data.train.count, " training images");
  const int64_t total_steps = config.steps > 0 ? config.steps : config.epochs * steps_per_epoch;
  const int64_t epochs = (total_steps + steps_per_epoch - 1) / steps_per_epoch;
  LrSchedule schedule;
  schedule.kind = config.schedule;
  schedule.base_lr = config.lr;
  schedule.total_steps = total_steps;
  schedule.warmup_steps = config.warmup_steps;
  schedule.step_size = std::max<int64_t>(1, total_steps / 3);
  schedule.validate();

  TrainResult result;
  result.parameters = model.parameter_count();
  result.macs_per_image = model.macs_per_image(data.train.height, data.train.width);
  spdlog::info("model resnet{} ({} stem, width {}): {} parameters, {:.3f} GMAC per image", mc.depth,
               mc.stem, mc.width, result.parameters, result.macs_per_image * 1e-9);
  spdlog::info(
      "data: {} train / {} test images {}x{}x{}, {} classes; {} steps of batch {} on {} "
      "with {} threads",
      data.train.count, data.test.count, data.train.height, data.train.width, data.train.channels,
      mc.classes, total_steps, config.batch_size, backend.name(), backend.threads());

  std::ofstream metrics;
  if (!config.metrics_path.empty()) {
    const auto dir = std::filesystem::path(config.metrics_path).parent_path();
    if (!dir.empty()) std::filesystem::create_directories(dir);
    metrics.open(config.metrics_path);
    RT_CHECK(metrics.good(), "train: cannot write metrics to ", config.metrics_path);
  }
  const Normalization norm = channel_statistics(data.train);
  const ImageWriter train_writer(data.train, norm, 4, backend.compute_dtype(), backend.layout());
  const ImageWriter test_writer(data.test, norm, 4, backend.compute_dtype(), backend.layout());
  Loader train_loader(data.train, train_writer, sampler, loader_config(config, true), backend);
  Loader test_loader(data.test, test_writer,
                     DistributedSampler(data.test.count, 1, 0, false, ShardTail::uneven, 0),
                     loader_config(config, false), backend);
  DevicePrefetcher train_batches(train_loader, backend), test_batches(test_loader, backend);
  Tensor dlogits = backend.zeros({config.batch_size, mc.classes}, backend.compute_dtype());
  int64_t step = 0;
  const auto start = Clock::now();
  auto last_log = start;
  for (int64_t epoch = 0; epoch < epochs; ++epoch) {
    train_batches.start_epoch(epoch);
    const auto epoch_start = Clock::now();
    double loss_sum = 0;
    int64_t correct = 0, seen = 0;
    double lr = 0;
    for (int64_t b = 0; b < steps_per_epoch && step < total_steps; ++b, ++step) {
      const DeviceBatch* batch = train_batches.next();
      RT_CHECK(batch, "train: loader ended the epoch after ", b, " of ", steps_per_epoch,
               " batches");
      lr = schedule.at(step);
      const Tensor& logits = model.forward(batch->images, true);
      const double loss =
          backend.softmax_cross_entropy(logits, batch->labels, config.label_smoothing, &dlogits);
      RT_CHECK(std::isfinite(loss), "train: loss is ", loss, " at step ", step, " (learning rate ",
               lr, " too high?)");
      correct += backend.count_correct(logits, batch->labels);
      model.backward(dlogits);
      sgd.step(static_cast<float>(lr));
      result.step_losses.push_back(loss);
      loss_sum += loss;
      seen += config.batch_size;
      if (seconds_since(last_log) >= config.log_interval_s || step + 1 == total_steps) {
        last_log = Clock::now();
        const double elapsed = seconds_since(start);
        const double rate = (step + 1) * double(config.batch_size) / elapsed;
        spdlog::info("epoch {}/{} step {}/{} loss {:.4f} lr {:.4g} {:.1f} img/s ETA {}", epoch + 1,
                     epochs, step + 1, total_steps, loss, lr, rate,
                     format_duration(elapsed / (step + 1) * (total_steps - step - 1)));
      }
    }
    EpochMetrics m;
    m.epoch = epoch + 1;
    m.step = step;
    m.lr = lr;
    m.train_loss = loss_sum / std::max<int64_t>(1, seen / config.batch_size);
    m.train_accuracy = static_cast<double>(correct) / std::max<int64_t>(1, seen);
    m.epoch_time_s = seconds_since(epoch_start);
    m.images_per_s = seen / m.epoch_time_s;
    const Evaluation ev = evaluate(model, backend, test_batches, data.test.count);
    m.test_loss = ev.loss;
    m.test_accuracy = ev.accuracy;
    spdlog::info(
        "epoch {} done: train loss {:.4f} acc {:.2f}%, test loss {:.4f} acc {:.2f}%, "
        "{:.1f} img/s",
        m.epoch, m.train_loss, 100 * m.train_accuracy, m.test_loss, 100 * m.test_accuracy,
        m.images_per_s);
    if (metrics.is_open()) write_metrics(metrics, m);
    result.epochs.push_back(m);
  }
  double train_time = 0;
  for (const auto& m : result.epochs) train_time += m.epoch_time_s;
  result.train_time_s = train_time;
  result.images_per_s = static_cast<double>(step) * config.batch_size / train_time;
  // One training step costs three forward passes; a multiply-accumulate is two FLOPs.
  result.achieved_gflops = result.images_per_s * 6.0 * result.macs_per_image * 1e-9;
  spdlog::info(
      "summary: {} steps in {}, {:.1f} img/s, {:.1f} GFLOP/s achieved, final test "
      "accuracy {:.2f}%",
      step, format_duration(train_time), result.images_per_s, result.achieved_gflops,
      100 * result.epochs.back().test_accuracy);
  return result;
}

}  // namespace ringtrain
