#include "ringtrain/run/setup.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "ringtrain/backend/devices.hpp"
#include "ringtrain/core/checked_math.hpp"
#include "ringtrain/data/hdf5_io.hpp"
#include "ringtrain/data/synthetic.hpp"
#include "ringtrain/distributed/nccl_communicator.hpp"
#include "ringtrain/distributed/world.hpp"
#include "ringtrain/loader/sampler.hpp"
#include "ringtrain/loader/streaming_loader.hpp"
#include "ringtrain/parallel/data_parallel.hpp"

namespace ringtrain {

namespace {

int64_t budget_bytes(const TrainConfig& c) {
  return static_cast<int64_t>(c.memory_budget_mb * 1e6);
}

// Writes the synthetic dataset to `path` when it is not there; true when it wrote it.
bool write_synthetic_if_missing(const std::string& path) {
  if (std::filesystem::exists(path)) return false;
  const auto dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir);
  const Dataset data = make_synthetic(SynthConfig{});
  write_hdf5_dataset(path, data, 0,
                     synthetic_attributes(SynthConfig{}, data, "ringtrain train (no --data)"));
  return true;
}

// Images per window of streamed train images: the budget's worth. Throws a ConfigError naming
// the minimum when the budget holds less than one batch for every rank.
int64_t stream_window(const TrainConfig& c, const Split& train, int world_size) {
  const int64_t image = train.image_bytes();
  const int64_t window = budget_bytes(c) / image;
  const int64_t batch = int64_t{c.batch_size} * world_size;
  if (window >= batch) return window;
  const double need_mb =
      std::ceil(static_cast<double>(checked_mul(batch, image, "streaming: window bytes")) / 1e3) /
      1e3;
  throw ConfigError(str_cat("--memory-budget-mb ", c.memory_budget_mb, " holds ", window,
                            " train images of ", image, " bytes: at least ", need_mb,
                            " MB needed (one window of a batch of ", c.batch_size, " images for",
                            " each of ", world_size, " rank(s)); raise --memory-budget-mb or",
                            " lower --batch-size"));
}

}  // namespace

std::string data_path(const TrainConfig& c) {
  return c.data.empty() ? c.synth_path : c.data;
}

Dataset load_data(const TrainConfig& c, Communicator& comm) {
  if (!c.data.empty()) return read_hdf5_dataset(c.data, budget_bytes(c));
  // Note: rank 0 writes the file first. Where --synth-path is on a node's own disk (node-local
  // scratch), the other nodes do not see it, so the first rank of each node then writes its
  // own copy; on a shared file system the file is there after the barrier and nothing is
  // written twice. The dataset is a pure function of its settings, so the copies are equal.
  double written = comm.rank() == 0 && write_synthetic_if_missing(c.synth_path) ? 1 : 0;
  comm.barrier();
  if (comm.rank() != 0 && World::get().local_rank() == 0 &&
      write_synthetic_if_missing(c.synth_path))
    written = 1;
  comm.all_reduce_host(&written, 1, ReduceOp::sum);
  if (written > 0)
    spdlog::info("no --data given: wrote the synthetic dataset {} on {} node(s)", c.synth_path,
                 written);
  spdlog::info("no --data given: using the synthetic dataset {}", c.synth_path);
  return read_hdf5_dataset(c.synth_path, budget_bytes(c));
}

LoaderConfig loader_config(const TrainConfig& c, bool training) {
  LoaderConfig l;
  l.batch_size = training || c.eval_batch_size == 0 ? c.batch_size : c.eval_batch_size;
  l.workers = c.workers;
  l.prefetch_factor = c.prefetch_factor;
  l.persistent_workers = c.persistent_workers;
  l.augment = training && c.augment;
  l.shuffle = training;
  l.drop_last = training;
  l.seed = c.seed;
  l.debug_delay_s = training ? c.debug_loader_delay_ms * 1e-3 : 0;
  return l;
}

ImageFormat loader_format(const TrainConfig& c, const Backend& backend) {
  if (c.augment_on == AugmentOn::device) return {DType::u8, Layout::nhwc};
  return {backend.compute_dtype(), backend.layout()};
}

TrainSource make_train_source(const TrainConfig& c, const Split& train, const World& world,
                              Backend& backend) {
  TrainSource s;
  const LoaderConfig lc = loader_config(c, true);
  // Note: a crop shifted by up to `pad` pixels from an image no wider than `pad` can be all
  // padding. Batches of identical padding images give every batch norm a zero variance, whose
  // gradient amplifies rounding noise by 1/sqrt(eps) per layer until it overflows.
  if (lc.augment && (train.height <= lc.pad || train.width <= lc.pad))
    throw ConfigError(str_cat("random crops with ", lc.pad, " pixels of padding need train images ",
                              "larger than ", lc.pad, "x", lc.pad, "; these are ", train.height,
                              "x", train.width, ": add --no-augment"));
  const ImageFormat format = loader_format(c, backend);
  if (!train.images.empty()) {
    s.norm = channel_statistics(train);
    if (c.augment_on == AugmentOn::device) s.augment = make_device_augment(s.norm, lc.pad, backend);
    s.transform =
        std::make_unique<ImageTransform>(train, s.norm, lc.pad, format.dtype, format.layout);
    s.batches = std::make_unique<Loader>(
        train, *s.transform,
        DistributedSampler(train.count, world.size(), world.rank(), true, ShardTail::drop, c.seed),
        lc, backend);
    return s;
  }
  const int64_t window = stream_window(c, train, world.size());
  spdlog::info(
      "train images ({:.1f} MB) exceed --memory-budget-mb {}: streaming windows of {} images",
      train.count * train.image_bytes() / 1e6, c.memory_budget_mb, window);
  s.window_images = window;
  s.norm = StreamingLoader::statistics(data_path(c), "train", train, window);
  if (c.augment_on == AugmentOn::device) s.augment = make_device_augment(s.norm, lc.pad, backend);
  s.batches =
      std::make_unique<StreamingLoader>(data_path(c), "train", train, window, s.norm, format.dtype,
                                        format.layout, world.size(), world.rank(), lc, backend);
  return s;
}

int dp_devices(const TrainConfig& c, int visible_gpus) {
  if (c.device == DeviceKind::cpu) return c.devices > 0 ? c.devices : 2;
  RT_CHECK_AS(ConfigError, visible_gpus > 0,
              "config: --mode dp --device cuda, but no CUDA device is visible");
  if (c.devices == 0) return c.dp_share_device ? 2 : visible_gpus;
  RT_CHECK_AS(ConfigError, c.dp_share_device || c.devices <= visible_gpus, "config: --devices ",
              c.devices, ", but only ", visible_gpus,
              " CUDA device(s) are visible: lower --devices to ", visible_gpus,
              " or fewer, or check CUDA_VISIBLE_DEVICES");
  return c.devices;
}

TrainConfig per_rank_config(TrainConfig c, int world_size) {
  if (c.mode == Mode::dp)
    c.devices = dp_devices(c, c.device == DeviceKind::cuda ? probe_devices().cuda_devices : 0);
  if (c.global_batch_size > 0) {
    const int64_t parts = int64_t{world_size} * std::max(1, c.accum_steps);
    RT_CHECK_AS(ConfigError, c.global_batch_size % parts == 0, "config: --global-batch-size ",
                c.global_batch_size, " does not divide evenly over ", world_size, " ranks x ",
                c.accum_steps, " micro-batches");
    c.batch_size = static_cast<int>(c.global_batch_size / parts);
  }
  c.validate();
  return c;
}

namespace {

// Note: on a GPU the loader has the rank's cores but one (the thread that drives the GPU), up
// to 8; on the CPU the compute threads have them all, and two loader threads keep ahead of them
// (the loader assembles thousands of images a second per thread, the CPU trains hundreds).
int workers_from_cores(DeviceKind device, int cores) {
  if (device == DeviceKind::cpu) return std::min(2, cores);
  return std::clamp(cores - 1, 1, 8);
}

}  // namespace

void use_cpu_share(TrainConfig& c, const World& world) {
  const CpuShare share = node_cpu_share(world);
  const bool threads_chosen = c.threads == 0;
  if (threads_chosen) c.threads = share.cores;
  const bool workers_chosen = c.workers == limits::kWorkersFromCores;
  if (workers_chosen) c.workers = workers_from_cores(c.device, share.cores);
  spdlog::info(
      "CPU: this rank may use {} core(s) (its affinity mask holds {}, shared by {} rank(s) of "
      "this node): {}{} loader thread(s){}",
      share.cores, share.affinity_cores, share.sharing_ranks,
      c.device == DeviceKind::cpu
          ? str_cat(c.threads, " compute thread(s)", threads_chosen ? "" : " (--threads)", ", ")
          : std::string(),
      c.workers == limits::kWorkersAuto ? std::string("probed") : std::to_string(c.workers),
      workers_chosen ? "" : " (--workers)");
}

std::string conv_algo_cache_path(const TrainConfig& c) {
  if (c.conv_algo_cache == "none") return "";
  if (!c.conv_algo_cache.empty()) return c.conv_algo_cache;
  return (std::filesystem::path(c.checkpoint_dir) / "conv_algos.json").string();
}

ResNetConfig model_config(const TrainConfig& c, const Dataset& data) {
  ResNetConfig mc = c.model;
  mc.in_channels = data.train.channels;
  mc.classes = data.classes();
  return mc;
}

CommOptions comm_options(const TrainConfig& c) {
  return CommOptions{c.comm_timeout_s, c.debug_collectives, c.debug_comm_delay_ms * 1e-3};
}

GradientCommunicator::GradientCommunicator(const TrainConfig& c, const World& world,
                                           Backend& backend, Communicator& mpi)
    : nccl_(c.device == DeviceKind::cuda
                ? make_nccl_communicator(world.comm(), backend, comm_options(c))
                : nullptr),
      mpi_(mpi) {}

DeviceRequest device_request(const TrainConfig& c) {
  DeviceRequest r;
  r.kind = c.device;
  r.replicas = c.mode == Mode::dp ? c.devices : 1;
  r.share_device = c.dp_share_device;
  r.threads = c.threads;
  r.compute = compute_dtype(c.amp);
  r.deterministic = c.deterministic;
  r.conv_algo_cache = conv_algo_cache_path(c);
  return r;
}

}  // namespace ringtrain
