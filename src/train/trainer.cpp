#include "ringtrain/train/trainer.hpp"

#include <spdlog/spdlog.h>

#include <array>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <thread>

#include "ringtrain/backend/devices.hpp"
#include "ringtrain/core/checked_math.hpp"
#include "ringtrain/core/clock.hpp"
#include "ringtrain/core/version.hpp"
#include "ringtrain/data/device_prefetcher.hpp"
#include "ringtrain/data/fingerprint.hpp"
#include "ringtrain/data/sampler.hpp"
#include "ringtrain/dist/mpi_communicator.hpp"
#include "ringtrain/dist/nccl_communicator.hpp"
#include "ringtrain/dist/world.hpp"
#include "ringtrain/optim/loss_scaler.hpp"
#include "ringtrain/optim/lr_schedule.hpp"
#include "ringtrain/optim/sgd.hpp"
#include "ringtrain/parallel/data_parallel.hpp"
#include "ringtrain/parallel/ddp.hpp"
#include "ringtrain/prof/gpu_monitor.hpp"
#include "ringtrain/prof/report.hpp"
#include "ringtrain/train/checkpointer.hpp"
#include "ringtrain/train/diagnose.hpp"
#include "ringtrain/train/resume_position.hpp"
#include "ringtrain/train/run_report.hpp"
#include "ringtrain/train/setup.hpp"
#include "ringtrain/train/stop_signal.hpp"

namespace ringtrain {
namespace {

// Sums over this rank's share of the test split; reduced over the ranks by the caller.
struct EvalSums {
  double loss = 0, correct = 0, count = 0;
};

EvalSums evaluate(ResNet& model, Backend& backend, DevicePrefetcher& batches) {
  EvalSums s;
  batches.start_epoch(0);
  while (const DeviceBatch* b = batches.next()) {
    const int64_t n = b->images.dim(0);
    const Tensor& logits = model.forward(b->images, false);
    s.loss += backend.softmax_cross_entropy(logits, b->labels, 0.0f, nullptr) * n;
    s.correct += static_cast<double>(backend.count_correct(logits, b->labels));
    s.count += static_cast<double>(n);
  }
  return s;
}

struct StepStats {
  double loss = 0;
  int64_t correct = 0;
};

// What computes the gradients: one model (with DDP when there are several ranks) or
// DataParallel's replicas.
struct Replicas {
  ResNet& model;
  Backend& backend;
  DistributedDataParallel* ddp;
  DataParallel* dp;
  StepProfiler& prof;
};

// One forward and backward, the loss gradient scaled by grad_scale; with DDP the averaged
// gradients are complete on return (after the final micro-step).
StepStats micro_step(Replicas& r, const DeviceBatch& batch, float smoothing, double grad_scale,
                     Tensor& dlogits) {
  if (r.dp) {
    const DataParallel::StepResult x =
        r.dp->step(batch.images, batch.labels, smoothing, grad_scale, &r.prof);
    return {x.loss, x.correct};
  }
  StepStats s;
  r.prof.start(Phase::forward);
  const Tensor& logits = r.model.forward(batch.images, true);
  s.loss = r.backend.softmax_cross_entropy(logits, batch.labels, smoothing, &dlogits);
  s.correct = r.backend.count_correct(logits, batch.labels);
  if (grad_scale != 1.0) r.backend.scale(dlogits, grad_scale);
  r.prof.start(Phase::backward);
  r.model.backward(dlogits);
  if (r.ddp) {
    r.prof.start(Phase::comm);  // what is left of the all-reduces once backward is done
    r.ddp->finish_gradients();
  }
  return s;
}

// One optimizer step's gradients from k micro-batches, each loss scaled by loss_scale / k: the
// earlier micro-steps' gradients are summed in `sum` and added to the last one's, by DDP bucket by
// bucket before its all-reduce (no communication before the last micro-step), or here.
StepStats accumulated_step(Replicas& r, DevicePrefetcher& batches, int k, float smoothing,
                           double loss_scale, Tensor& dlogits, Tensor& sum) {
  StepStats total;
  Tensor& grads = r.model.parameters().flat_grads();
  for (int micro = 0; micro < k; ++micro) {
    const DeviceBatch* batch = batches.next();
    RT_CHECK(batch, "train: the loader ran out of batches in the middle of a step");
    const bool last = micro + 1 == k;
    if (r.ddp && k > 1) r.ddp->begin_micro_step(last, micro > 0 ? &sum : nullptr);
    const StepStats s = micro_step(r, *batch, smoothing, loss_scale / k, dlogits);
    total.loss += s.loss / k;
    total.correct += s.correct;
    if (!last) {
      if (micro == 0) {
        r.backend.copy(grads, sum);
      } else {
        r.backend.add(sum, grads, sum);
      }
    } else if (k > 1 && !r.ddp) {
      r.backend.add(grads, sum, grads);
    }
  }
  return total;
}

// Tests: --debug-fail-rank throws and --debug-hang-rank sleeps for ever (a stuck peer) at their
// step.
void inject_faults(const TrainConfig& c, int rank, int64_t step) {
  RT_CHECK(!(rank == c.debug_fail_rank && step == c.debug_fail_step),
           "train: failure injected by --debug-fail-rank at step ", step);
  if (rank != c.debug_hang_rank || step != c.debug_hang_step) return;
  spdlog::warn("rank {}: hanging at step {} (--debug-hang-rank)", rank, step);
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

// Tests: --debug-startup-delay-ms makes the start-up (before the data is loaded) that much longer.
void delay_startup(const TrainConfig& c) {
  if (c.debug_startup_delay_ms <= 0) return;
  spdlog::info("start-up delayed by {} ms (--debug-startup-delay-ms)", c.debug_startup_delay_ms);
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(c.debug_startup_delay_ms));
}

// What a checkpoint must match to continue this run.
CheckpointMeta run_identity(const TrainConfig& c, const ResNetConfig& mc, const Dataset& data,
                            const World& world, int64_t window_images) {
  CheckpointMeta m;
  m.model = str_cat("resnet", mc.depth, " ", mc.stem, " stem, width ", mc.width, ", ",
                    mc.in_channels, " input channels, ", mc.classes, " classes");
  m.data = str_cat(data_path(c), " (", data.train.count, " train images ", data.train.height, "x",
                   data.train.width, "x", data.train.channels, ")");
  m.data_fingerprint = data_fingerprint(data, data_path(c));
  m.seed = c.seed;
  m.batch_per_rank = c.batch_size;
  m.world_size = world.size();
  m.accum_steps = c.accum_steps;
  m.sample_order = describe_sample_order(window_images);
  m.config = describe(c);
  m.version = RINGTRAIN_VERSION;
  return m;
}

// A NaN or infinite loss ends the run with its own error: rerunning it would only repeat it.
// `which` and `when` say which loss it was: "the loss at step" 17.
void check_finite(double loss, const char* which, int64_t when, double peak_lr, bool fp16) {
  if (std::isfinite(loss)) return;
  throw DivergedError(str_cat("train: diverged: ", which, " ", when, " is ", loss, "; likely --lr ",
                              peak_lr, " is too high (lower it or add --warmup-steps)",
                              fp16 ? ", or fp16 overflowed (try --amp bf16)" : ""));
}

LrSchedule make_schedule(const TrainConfig& c, int64_t total_steps) {
  LrSchedule s;
  s.kind = c.schedule;
  s.base_lr = c.lr;
  s.total_steps = total_steps;
  s.warmup_steps = c.warmup_steps;
  s.step_size = std::max<int64_t>(1, total_steps / 3);
  s.validate();
  return s;
}

}  // namespace

TrainResult train(const TrainConfig& requested) {
  install_stop_signal_handlers();  // before the long start-up (the CLI did it before MPI_Init)
  World& world = World::get();
  MpiCommunicator comm(world.comm(),
                       CommOptions{requested.comm_timeout_s, requested.debug_collectives,
                                   requested.debug_comm_delay_ms * 1e-3});
  if (!world.is_root()) spdlog::set_level(spdlog::level::warn);  // rank 0 logs for the job
  if (world.size() > 1) {
    const std::string placement = describe_placement(world);  // collective: every rank calls it
    spdlog::info("{}", placement);
  }
  TrainConfig config = per_rank_config(requested, world.size());
  if (world.is_root())  // before any training: an unwritable folder would fail the first save
    for (const std::string& path : prepare_checkpoint_dir(config.checkpoint_dir))
      spdlog::info("removed {}, left by an interrupted checkpoint", path);
  delay_startup(config);
  const Dataset data = load_data(config, comm);
  ResNetConfig mc = config.model;
  mc.in_channels = data.train.channels;
  mc.classes = data.classes();

  // The model: one replica per process (DDP when there are several ranks), or DataParallel's
  // replicas in this one process.
  std::optional<DataParallel> dp;
  std::unique_ptr<Backend> own_backend;
  std::unique_ptr<ResNet> own_model;
  if (config.mode == "dp") {
    RT_CHECK_AS(ConfigError, world.size() == 1,
                "train: --mode dp drives every device from one process; run it "
                "without mpirun (this job has ",
                world.size(), " ranks)");
    dp.emplace(mc, config.devices, std::max(1, config.threads / config.devices), config.seed);
  } else {
    own_backend = make_backend(config, world);
    own_model = std::make_unique<ResNet>(mc, *own_backend, DType::f32, config.seed);
  }
  Backend& backend = dp ? dp->primary_backend() : *own_backend;
  ResNet& model = dp ? dp->primary() : *own_model;
  // Gradients and SyncBatchNorm sums travel over NCCL on CUDA, over MPI on the CPU.
  std::unique_ptr<Communicator> nccl;
  if (world.size() > 1 && config.device == "cuda")
    nccl = make_nccl_communicator(world.comm(), backend,
                                  CommOptions{config.comm_timeout_s, config.debug_collectives});
  Communicator& grad_comm = nccl ? *nccl : comm;
  std::optional<DistributedDataParallel> ddp;
  if (world.size() > 1 && config.sync_bn) model.set_sync_batch_norm(&grad_comm);
  if (world.size() > 1) {
    ddp.emplace(model.parameters(), grad_comm, backend,
                DdpConfig{config.bucket_cap_mb, 1.0, config.overlap});
  }
  Sgd sgd(
      model.parameters(), backend,
      SgdConfig{config.momentum, config.weight_decay, config.nesterov, config.decay_norm_and_bias});
  if (config.workers < 0) {
    config.workers = choose_workers(config, data, world, backend);
    spdlog::info("--workers auto: {} loader thread(s)", config.workers);
  }
  TrainSource train_source = make_train_source(config, data.train, world, backend);
  const int64_t steps_per_epoch = train_source.batches->batches_per_epoch() / config.accum_steps;
  RT_CHECK(steps_per_epoch > 0, "train: ", train_source.batches->batches_per_epoch(),
           " batches per epoch cannot make one step of ", config.accum_steps, " micro-batches");
  const int64_t total_steps =
      config.steps > 0 ? config.steps
                       : checked_mul(config.epochs, steps_per_epoch, "train: --epochs x steps");
  const int64_t epochs = total_steps / steps_per_epoch + (total_steps % steps_per_epoch != 0);
  const LrSchedule schedule = make_schedule(config, total_steps);
  const int64_t global_batch = int64_t{config.batch_size} * world.size() * config.accum_steps;

  const std::string device = dp ? str_cat("DataParallel over ", config.devices, " CPU devices")
                                : describe_backend(backend);
  TrainResult result;
  result.parameters = model.parameter_count();
  result.macs_per_image = model.macs_per_image(data.train.height, data.train.width);
  spdlog::info("model resnet{} ({} stem, width {}): {} parameters, {:.3f} GMAC per image", mc.depth,
               mc.stem, mc.width, result.parameters, result.macs_per_image * 1e-9);
  spdlog::info(
      "data: {} train / {} test images {}x{}x{}, {} classes; {} steps of batch {} ({} per rank x "
      "{} ranks x {} micro-batches) on {}",
      data.train.count, data.test.count, data.train.height, data.train.width, data.train.channels,
      mc.classes, total_steps, global_batch, config.batch_size, world.size(), config.accum_steps,
      device);
  spdlog::info(
      "loader: {} worker(s), {} ready batch(es) each; images normalised {}{}", config.workers,
      config.prefetch_factor,
      config.augment_on == "device" ? "on the device after the copy" : "in the loader threads",
      config.augment ? ", randomly cropped and flipped" : ", not augmented");
  const LoaderConfig test_config = loader_config(config, false);
  const ImageFormat format = loader_format(config, backend);
  const ImageWriter test_writer(data.test, train_source.norm, test_config.pad, format.dtype,
                                format.layout);
  Loader test_loader(
      data.test, test_writer,
      DistributedSampler(data.test.count, world.size(), world.rank(), false, ShardTail::uneven, 0),
      test_config, backend);
  StepProfiler prof(backend, parse_profile_mode(config.profile));
  DevicePrefetcher train_batches(*train_source.batches, backend, &prof, train_source.augment),
      test_batches(test_loader, backend, nullptr, train_source.augment);
  Tensor dlogits = backend.zeros({config.batch_size, mc.classes}, backend.compute_dtype());
  Replicas replicas{model, backend, ddp ? &*ddp : nullptr, dp ? &*dp : nullptr, prof};
  Tensor gradient_sum;  // gradient accumulation: the earlier micro-steps' gradients
  if (config.accum_steps > 1)
    gradient_sum = backend.zeros(model.parameters().flat_grads().shape(),
                                 model.parameters().flat_grads().dtype());
  LossScaler scaler(backend.compute_dtype() == DType::f16);
  GpuMonitor gpu_monitor(config.device == "cuda" ? device_bus_id(backend.device_id().index) : "");
  if (config.device == "cuda" && !gpu_monitor.available())
    spdlog::info("GPU utilisation not measured: {}", gpu_monitor.why_unavailable());
  RunReport report(config, world.is_root(), total_steps, epochs, global_batch);
  Checkpointer checkpoints(config, comm,
                           run_identity(config, mc, data, world, train_source.window_images));
  const RunPosition start =
      checkpoints.resume(backend, model.parameters(), sgd.momentum_buffer(), scaler);
  if (ddp) ddp->broadcast_state();  // rank 0's start (each rank loaded the same checkpoint)
  result.stopped =
      checkpoints.before_start(start, backend, model.parameters(), sgd.momentum_buffer(), scaler);
  int64_t step = start.step;
  for (int64_t epoch = start.epoch; epoch < epochs && !result.stopped; ++epoch) {
    train_batches.start_epoch(epoch);
    const int64_t skipped = epoch == start.epoch ? start.batch_in_epoch : 0;
    train_batches.skip(skipped);  // resumed in the middle of this epoch
    const auto epoch_start = Clock::now();
    const PhaseTimes phases_before = prof.totals();
    // Reduced over ranks below: loss over steps, correct, images, then the phase seconds.
    std::array<double, 3 + kPhases> sums{};
    int64_t steps_this_epoch = 0;
    double lr = 0;
    for (int64_t b = skipped / config.accum_steps; b < steps_per_epoch && step < total_steps; ++b) {
      inject_faults(config, world.rank(), step);
      lr = schedule.at(step);
      const double loss_scale = scaler.scale();
      const StepStats st =
          accumulated_step(replicas, train_batches, config.accum_steps, config.label_smoothing,
                           loss_scale, dlogits, gradient_sum);
      check_finite(st.loss, "the loss at step", step, config.lr, scaler.enabled());
      prof.start(Phase::optimizer);
      const bool finite = !scaler.enabled() || backend.all_finite(model.parameters().flat_grads());
      if (scaler.update(finite)) {
        sgd.step(static_cast<float>(lr), static_cast<float>(1.0 / loss_scale));
      } else {
        spdlog::warn("step {}: gradients overflowed at loss scale {}; step skipped, scale now {}",
                     step, loss_scale, scaler.scale());
      }
      prof.start(Phase::other);
      result.step_losses.push_back(st.loss);
      sums[0] += st.loss;
      sums[1] += static_cast<double>(st.correct);
      sums[2] += int64_t{config.batch_size} * config.accum_steps;
      ++steps_this_epoch;
      report.progress(epoch, step, st.loss, lr);
      prof.end_step();
      ++step;
      const bool epoch_done = b + 1 == steps_per_epoch;
      const RunPosition next{step, epoch_done ? epoch + 1 : epoch,
                             epoch_done ? 0 : (b + 1) * config.accum_steps};
      result.stopped =
          checkpoints.after_step(next, backend, model.parameters(), sgd.momentum_buffer(), scaler);
      if (result.stopped) break;
    }
    if (result.stopped) break;  // mid-epoch: no epoch metrics, no evaluation
    for (int p = 0; p < kPhases; ++p) sums[3 + p] = prof.totals()[p] - phases_before[p];
    comm.all_reduce_host(sums.data(), static_cast<int>(sums.size()), ReduceOp::sum);
    EpochMetrics m;
    m.epoch = epoch + 1;
    m.step = step;
    m.lr = lr;
    m.train_loss = sums[0] / world.size() / std::max<int64_t>(1, steps_this_epoch);
    m.train_accuracy = sums[1] / std::max(1.0, sums[2]);
    m.epoch_time_s = seconds_since(epoch_start);
    m.images_per_s = sums[2] / m.epoch_time_s;
    PhaseTimes epoch_phases{};
    std::copy(sums.begin() + 3, sums.end(), epoch_phases.begin());
    m.phase_shares = phase_shares(epoch_phases);
    const GpuMonitor::Stats util = gpu_monitor.take();
    m.gpu_util_mean = util.mean;
    m.gpu_util_min = util.min;
    m.test_loss = m.test_accuracy = std::nan("");
    if (config.evaluate) {
      // Ranks saw different batches, so their BN running statistics differ: evaluate rank 0's.
      if (ddp) ddp->broadcast_buffers();
      EvalSums ev = evaluate(model, backend, test_batches);
      comm.all_reduce_host(&ev.loss, 3, ReduceOp::sum);
      RT_CHECK(ev.count == data.test.count, "evaluate: ranks saw ", ev.count,
               " test samples, expected ", data.test.count);
      m.test_loss = config.debug_eval_nan ? std::nan("") : ev.loss / ev.count;
      check_finite(m.test_loss, "the test loss after epoch", m.epoch, config.lr, scaler.enabled());
      m.test_accuracy = ev.correct / ev.count;
    }
    report.epoch_done(m);
    result.epochs.push_back(m);
  }
  if (!result.stopped) {
    const RunPosition end{step, step / steps_per_epoch,
                          (step % steps_per_epoch) * config.accum_steps};
    checkpoints.at_end(end, backend, model.parameters(), sgd.momentum_buffer(), scaler);
  }
  result.checkpoint = checkpoints.last_written();
  if (result.epochs.empty()) return result;  // stopped in the first epoch run
  for (const auto& m : result.epochs) result.train_time_s += m.epoch_time_s;
  result.steps = step;
  result.images_per_s = static_cast<double>(step) * global_batch / result.train_time_s;
  result.achieved_gflops = achieved_tflops(result) * 1e3;
  result.phase_totals = prof.totals();
  comm.all_reduce_host(result.phase_totals.data(), kPhases, ReduceOp::average);
  result.device = device;
  result.ranks = world.size();
  result.peak_tflops = config.peak_tflops > 0 ? config.peak_tflops : peak_tflops(backend.name());
  report.run_done(result);
  if (prof.mode() == ProfileMode::trace)
    write_chrome_trace(str_cat(config.trace_dir, "/trace_rank", world.rank(), ".json"),
                       prof.events(), world.rank(), describe_backend(backend),
                       backend.device_id().kind != DeviceKind::cpu);
  return result;
}

}  // namespace ringtrain
