#include "ringtrain/run_config/config.hpp"

namespace ringtrain {

namespace {

// NaN is outside every range.
template <class T>
void check_range(const char* setting, T value, T lo, T hi) {
  RT_CHECK_AS(ConfigError, value >= lo && value <= hi, "config: ", setting, " must be in [", lo,
              ", ", hi, "], got ", value);
}

template <class T>
void check_positive(const char* setting, T value, T hi) {
  RT_CHECK_AS(ConfigError, value > 0 && value <= hi, "config: ", setting, " must be in (0, ", hi,
              "], got ", value);
}

void check_numbers(const TrainConfig& c) {
  using namespace limits;
  check_range("--width", c.model.width, kMinWidth, kMaxWidth);
  check_range("--batch-size", c.batch_size, 1, kMaxBatch);
  check_range("--global-batch-size", c.global_batch_size, 0, kMaxGlobalBatch);
  check_range("--eval-batch-size", c.eval_batch_size, 0, kMaxBatch);
  check_range("--epochs", c.epochs, int64_t{1}, kMaxEpochs);
  check_range("--steps", c.steps, int64_t{0}, kMaxSteps);
  check_range("--warmup-steps", c.warmup_steps, int64_t{0}, kMaxSteps);
  check_positive("--lr", c.lr, kMaxLr);
  check_range("--momentum", c.optim.momentum, 0.0f, 1.0f);
  check_range("--weight-decay", c.optim.weight_decay, 0.0f, 1.0f);
  check_range("--label-smoothing", c.label_smoothing, 0.0f, 0.999f);
  check_range("--workers", c.workers, kWorkersFromCores, kMaxWorkers);
  check_range("--prefetch-factor", c.prefetch_factor, 1, kMaxPrefetch);
  check_positive("--bucket-cap-mb", c.bucket_cap_mb, kMaxMegabytes);
  check_positive("--comm-timeout", c.comm_timeout_s, kMaxSeconds);
  check_positive("--memory-budget-mb", c.memory_budget_mb, kMaxMegabytes);
  check_range("--devices", c.devices, 0, kMaxDevices);
  check_range("--accum-steps", c.accum_steps, 1, kMaxAccumSteps);
  check_range("--checkpoint-every", c.checkpoint_every, int64_t{0}, kMaxSteps);
  check_range("--checkpoint-minutes", c.checkpoint_minutes, 0.0, kMaxSeconds);
  check_range("--keep", c.keep_checkpoints, 1, kMaxKeep);
  check_range("--peak-tflops", c.peak_tflops, 0.0, kMaxTflops);
  check_range("--threads", c.threads, 0, kMaxThreads);
  check_range("--log-interval", c.log_interval_s, 0.0, kMaxSeconds);
}

}  // namespace

template <>
const NameTable<Mode>& names_of<Mode>() {
  static const NameTable<Mode> names = {{"ddp", Mode::ddp}, {"dp", Mode::dp}};
  return names;
}

template <>
const NameTable<Precision>& names_of<Precision>() {
  static const NameTable<Precision> names = {
      {"bf16", Precision::bf16}, {"fp16", Precision::fp16}, {"off", Precision::f32}};
  return names;
}

template <>
const NameTable<GradComm>& names_of<GradComm>() {
  static const NameTable<GradComm> names = {{"f32", GradComm::f32}, {"bf16", GradComm::bf16}};
  return names;
}

template <>
const NameTable<AugmentOn>& names_of<AugmentOn>() {
  static const NameTable<AugmentOn> names = {{"host", AugmentOn::host},
                                             {"device", AugmentOn::device}};
  return names;
}

DType compute_dtype(Precision p) {
  switch (p) {
    case Precision::bf16:
      return DType::bf16;
    case Precision::fp16:
      return DType::f16;
    case Precision::f32:
      return DType::f32;
  }
  throw Error("compute_dtype: unknown precision");
}

namespace {

// --cuda-graph captures one micro-batch's step on one GPU, reading no value back.
void check_cuda_graph(const TrainConfig& c) {
  if (!c.cuda_graph) return;
  RT_CHECK_AS(ConfigError, c.device == DeviceKind::cuda,
              "config: --cuda-graph is for --device cuda (the CPU runs no graphs); drop it");
  RT_CHECK_AS(ConfigError, c.amp != Precision::fp16,
              "config: --cuda-graph needs --amp bf16 or f32: fp16's loss scaling reads the "
              "gradients' finite check back every step");
  RT_CHECK_AS(ConfigError, c.accum_steps == 1,
              "config: --cuda-graph captures one micro-batch a step; drop --accum-steps ",
              c.accum_steps, " or --cuda-graph");
  RT_CHECK_AS(ConfigError, c.mode != Mode::dp,
              "config: --cuda-graph drives one GPU per process; drop --mode dp or --cuda-graph");
}

}  // namespace

void TrainConfig::validate() const {
  check_numbers(*this);
  RT_CHECK_AS(ConfigError, mode != Mode::dp || (devices > 0 && batch_size % devices == 0),
              "config: --mode dp splits the batch of ", batch_size, " evenly over ", devices,
              " devices: it does not divide");
  RT_CHECK_AS(ConfigError, !(sync_bn && mode == Mode::dp),
              "config: --sync-bn is for DDP; --mode dp keeps "
              "per-device statistics as torch.nn.DataParallel does");
  RT_CHECK_AS(ConfigError, mode == Mode::dp || !dp_share_device,
              "config: --dp-share-device is for --mode dp (a test aid that puts every "
              "DataParallel replica on device 0); add --mode dp or drop it");
  RT_CHECK_AS(ConfigError, grad_comm == GradComm::f32 || device == DeviceKind::cuda,
              "config: --grad-comm bf16 is for DDP on CUDA (NCCL sums bf16; MPI on the CPU has no "
              "bf16 type); drop it, or add --device cuda");
  RT_CHECK_AS(ConfigError, schedule != Schedule::onecycle || warmup_steps == 0,
              "config: --schedule onecycle has its own warmup (30% of the run): drop "
              "--warmup-steps, or choose another --schedule");
  RT_CHECK_AS(ConfigError, steps == 0 || warmup_steps < steps, "config: --warmup-steps ",
              warmup_steps, " must be shorter than the run of --steps ", steps,
              ": lower --warmup-steps or raise --steps");
  RT_CHECK_AS(ConfigError, resume != ResumeFrom::file || !resume_file.empty(),
              "config: --resume needs a checkpoint file or auto");
  RT_CHECK_AS(ConfigError, init_from.empty() || resume == ResumeFrom::none,
              "config: --init-from starts a new run from a file's weights, --resume continues a "
              "run (weights, optimizer state and position): choose one");
  check_cuda_graph(*this);
  resnet_layout(model.depth);
}

void apply_cpu_quick_config(TrainConfig& c) {
  c.model.depth = 18;
  c.model.width = 0.25;
  c.batch_size = 64;
  c.epochs = 2;
  c.steps = 0;
  c.lr = 0.05;
}

std::string describe(const TrainConfig& c) {
  return str_cat("resnet", c.model.depth, " stem ", to_string(c.model.stem), " width ",
                 c.model.width, ", batch ", c.batch_size, ", ",
                 c.steps > 0 ? str_cat(c.steps, " steps") : str_cat(c.epochs, " epochs"), ", lr ",
                 c.lr, " ", to_string(c.schedule), ", ", to_string(c.optim.kind));
}

}  // namespace ringtrain
