#include "ringtrain/run/session.hpp"

#include <spdlog/spdlog.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <thread>

#include "ringtrain/backend/devices.hpp"
#include "ringtrain/checkpoint/resume_position.hpp"
#include "ringtrain/core/checked_math.hpp"
#include "ringtrain/core/host.hpp"
#include "ringtrain/core/version.hpp"
#include "ringtrain/data/fingerprint.hpp"
#include "ringtrain/data/provenance.hpp"
#include "ringtrain/evaluation/evaluation.hpp"
#include "ringtrain/exchange/model_export.hpp"
#include "ringtrain/loader/sampler.hpp"
#include "ringtrain/optim/make_optimizer.hpp"
#include "ringtrain/run/probes.hpp"

namespace ringtrain {
namespace {

// Tests: --debug-startup-delay-ms makes the start-up (before the data is loaded) that much longer.
void delay_startup(const TrainConfig& c) {
  if (c.debug_startup_delay_ms <= 0) return;
  spdlog::info("start-up delayed by {} ms (--debug-startup-delay-ms)", c.debug_startup_delay_ms);
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(c.debug_startup_delay_ms));
}

// What a checkpoint must match to continue this run.
CheckpointMeta checkpoint_identity(const TrainConfig& c, const ResNetConfig& mc,
                                   const Dataset& data, const World& world,
                                   const TrainSource& source) {
  CheckpointMeta m;
  m.model_config = mc;
  m.image_height = data.train.height;
  m.image_width = data.train.width;
  m.class_names = data.class_names;
  m.norm = source.norm;
  m.model = str_cat("resnet", mc.depth, " ", to_string(mc.stem), " stem, width ", mc.width, ", ",
                    mc.in_channels, " input channels, ", mc.classes, " classes");
  m.data = str_cat(data_path(c), " (", data.train.count, " train images ", data.train.height, "x",
                   data.train.width, "x", data.train.channels, ")");
  m.data_fingerprint = data_fingerprint(data, data_path(c));
  m.seed = c.seed;
  m.optimizer = to_string(c.optim.kind);
  m.batch_per_rank = c.batch_size;
  m.world_size = world.size();
  m.accum_steps = c.accum_steps;
  m.sample_order = describe_sample_order(source.window_images);
  m.config = describe(c);
  m.effective_config = c.effective_config;
  m.version = RINGTRAIN_VERSION;
  return m;
}

// Who claims the checkpoint folder, as a run refused there reads it.
std::string run_holder(const TrainConfig& c) {
  char started[32] = "";
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  if (gmtime_r(&now, &utc)) std::strftime(started, sizeof(started), "%Y-%m-%d %H:%M:%S UTC", &utc);
  return str_cat("pid ", getpid(), " on ", host_name(), ", started ", started, ": ", describe(c));
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

TrainSession::TrainSession(const TrainConfig& requested)
    : world(World::get()),
      comm(world.comm(), comm_options(requested)),
      config(per_rank_config(requested, world.size())) {
  if (!world.is_root()) spdlog::set_level(spdlog::level::warn);  // rank 0 logs for the job
  if (world.size() > 1) {
    const std::string placement = describe_placement(world);  // collective: every rank calls it
    spdlog::info("{}", placement);
  }
  if (world.is_root()) {  // before any training: an unwritable folder would fail the first save
    CheckpointFolder folder = prepare_checkpoint_dir(config.checkpoint_dir, run_holder(config));
    checkpoint_claim = std::move(folder.claim);
    for (const std::string& path : folder.removed)
      spdlog::info("removed {}, left by an interrupted checkpoint", path);
  }
  use_cpu_share(config, world);
  delay_startup(config);
  data = load_data(config, comm);
  model_config = ringtrain::model_config(config, data);
  build_model();
  build_loaders();
  if (config.profile == ProfileMode::trace) trace_host_spans();
  build_length();
  log_start();
  report.emplace(config, world.is_root(), world.size(), length.total_steps, length.epochs,
                 length.global_batch);
  checkpoints.emplace(config, comm,
                      checkpoint_identity(config, model_config, data, world, train_source),
                      length.total_steps);
}

void TrainSession::build_model() {
  strategy = make_strategy(config, model_config, world, comm);
  // Note: every rank reads the same file (as --resume does) and resume() then broadcasts rank
  // 0's state; DataParallel copies replica 0's weights to the others before every step.
  if (!config.init_from.empty()) init_from(config.init_from, backend(), model().parameters());
  optimizer = make_optimizer(config.optim, model().parameters(), backend());
  scaler.emplace(backend().compute_dtype() == DType::f16);
}

void TrainSession::build_loaders() {
  if (config.workers == limits::kWorkersAuto) {
    config.workers = choose_workers(config, data, world, backend());
    spdlog::info("--workers auto: {} loader thread(s)", config.workers);
  }
  train_source = make_train_source(config, data.train, world, backend());
  LoaderConfig test_config = loader_config(config, false);
  const DistributedSampler test_sampler =
      evaluation_sampler(data.test.count, world.size(), world.rank());
  const int requested = test_config.batch_size;
  test_config.batch_size = evaluation_batch_size(requested, test_sampler.per_rank());
  const char* flag = config.eval_batch_size == 0 ? "--batch-size" : "--eval-batch-size";
  if (test_config.batch_size < requested)
    spdlog::info("test split: {}", clamped_batch_note(flag, requested, test_config.batch_size));
  const ImageFormat format = loader_format(config, backend());
  test_transform.emplace(data.test, train_source.norm, test_config.pad, format.dtype,
                         format.layout);
  test_loader.emplace(data.test, *test_transform, test_sampler, test_config, backend());
  profiler.emplace(backend(), config.profile);
  train_batches.emplace(*train_source.batches, backend(), &*profiler, train_source.augment);
  if (config.cuda_graph) {
    RT_CHECK_AS(ConfigError, world.size() == 1,
                "config: --cuda-graph does not capture DDP's all-reduces yet: run one rank, or "
                "drop --cuda-graph");
    graph.emplace(backend());
  }
  test_batches.emplace(*test_loader, backend(), nullptr, train_source.augment);
  const bool cuda = config.device == DeviceKind::cuda;
  gpu_monitor.emplace(cuda ? gpus_in_use() : std::vector<std::string>{});
  if (cuda && !gpu_monitor->available())
    spdlog::info("GPU utilisation not measured: {}", gpu_monitor->why_unavailable());
}

void TrainSession::trace_host_spans() {
  train_source.batches->trace_batches(profiler->clock());
  strategy->trace_communication(&*profiler);
}

std::vector<std::string> TrainSession::gpus_in_use() {
  std::vector<int> devices;
  for (Backend* b : strategy->backends()) {
    const int index = b->device_id().index;
    if (std::find(devices.begin(), devices.end(), index) == devices.end())
      devices.push_back(index);  // --dp-share-device: every replica on one
  }
  std::vector<std::string> bus_ids;
  for (int index : devices) bus_ids.push_back(device_bus_id(index));
  return bus_ids;
}

void TrainSession::build_length() {
  const int64_t batches = train_source.batches->batches_per_epoch();
  length.steps_per_epoch = batches / config.accum_steps;
  RT_CHECK_AS(ConfigError, length.steps_per_epoch > 0, "config: --accum-steps ", config.accum_steps,
              " is more than the ", batches,
              " batches of an epoch (per rank): lower --accum-steps to ", batches,
              " or fewer, or lower --batch-size");
  length.total_steps = config.steps > 0 ? config.steps
                                        : checked_mul(config.epochs, length.steps_per_epoch,
                                                      "train: --epochs x steps");
  length.epochs = (length.total_steps + length.steps_per_epoch - 1) / length.steps_per_epoch;
  length.global_batch = int64_t{config.batch_size} * world.size() * config.accum_steps;
  schedule = make_schedule(config, length.total_steps);
}

void TrainSession::log_start() {
  const ResNetConfig& mc = model_config;
  spdlog::info("model resnet{} ({} stem, width {}): {} parameters, {:.3f} GMAC per image", mc.depth,
               to_string(mc.stem), mc.width, model().parameter_count(),
               model().macs_per_image(data.train.height, data.train.width) * 1e-9);
  spdlog::info(
      "data: {} train / {} test images {}x{}x{}, {} classes; {} steps of batch {} ({} per rank x "
      "{} ranks x {} micro-batches) on {}",
      data.train.count, data.test.count, data.train.height, data.train.width, data.train.channels,
      mc.classes, length.total_steps, length.global_batch, config.batch_size, world.size(),
      config.accum_steps, device_name());
  spdlog::info("{}", describe_provenance(data, data_path(config)));
  spdlog::info("loader: {} worker(s), {} ready batch(es) each; images normalised {}{}",
               config.workers, config.prefetch_factor,
               config.augment_on == AugmentOn::device ? "on the device after the copy"
                                                      : "in the loader threads",
               config.augment ? ", randomly cropped and flipped" : ", not augmented");
}

std::string TrainSession::device_name() {
  return strategy->device_name();
}

std::vector<std::string> TrainSession::device_names() {
  if (config.device == DeviceKind::cpu) return {cpu_model()};
  std::vector<std::string> names;
  for (Backend* b : strategy->backends()) names.push_back(b->name());
  return names;
}

RunPosition TrainSession::resume() {
  ParameterSet& params = model().parameters();
  const RunPosition start = checkpoints->resume(backend(), params, *optimizer, *scaler);
  strategy->share_state();  // rank 0's start (each rank loaded the same checkpoint)
  return start;
}

bool TrainSession::stop_before_start(const RunPosition& start) {
  return checkpoints->before_start(start, backend(), model().parameters(), *optimizer, *scaler);
}

void TrainSession::checkpoint_at_end(const RunPosition& end) {
  checkpoints->at_end(end, backend(), model().parameters(), *optimizer, *scaler);
}

bool TrainSession::checkpoint_after_step(const RunPosition& at) {
  return checkpoints->after_step(at, backend(), model().parameters(), *optimizer, *scaler);
}

}  // namespace ringtrain
