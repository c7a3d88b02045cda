#pragma once
#include <cstdint>
#include <string>

#include "ringtrain/nn/resnet.hpp"
#include "ringtrain/optim/lr_schedule.hpp"
#include "ringtrain/optim/optimizer.hpp"
#include "ringtrain/prof/step_profiler.hpp"

namespace ringtrain {

// The range of every numeric setting: the CLI refuses a flag outside it, validate() a config.
// Wide enough for any real run, narrow enough that no size computed from them overflows.
namespace limits {
constexpr double kMinWidth = 1.0 / 64;  // the first stage keeps at least one channel
constexpr double kMaxWidth = 16;
constexpr int64_t kMaxEpochs = 1000000;
constexpr int64_t kMaxSteps = 1000000000000;  // also --warmup-steps, --checkpoint-every
constexpr int kMaxBatch = 65536;              // images per step and process
constexpr int kMaxGlobalBatch = 100000000;
constexpr double kMaxLr = 1e6;
constexpr int kMaxWorkers = 256;
// --workers auto: probed against the compute; cores: from this rank's share of its cores.
constexpr int kWorkersAuto = -1;
constexpr int kWorkersFromCores = -2;
constexpr int kMaxPrefetch = 64;
constexpr int kMaxThreads = 1024;
constexpr int kMaxDevices = 64;
constexpr int kMaxAccumSteps = 65536;
constexpr double kMaxMegabytes = 1e9;  // --memory-budget-mb, --bucket-cap-mb: a petabyte
constexpr double kMaxSeconds = 1e9;    // --comm-timeout, --log-interval (a steady_clock deadline)
constexpr int kMaxKeep = 1000;
constexpr double kMaxTflops = 1e6;
}  // namespace limits

// ddp: one process per device (under mpirun); dp: DataParallel's replicas in one process.
enum class Mode { ddp, dp };
// The CUDA compute dtype: bf16, fp16 (with dynamic loss scaling) or f32 (--amp off).
enum class Precision { bf16, fp16, f32 };
// What DDP's gradient all-reduces carry: the f32 gradients themselves, or a bf16 copy (half the
// bytes; the sum over the ranks rounded to bf16, accumulation still f32).
enum class GradComm { f32, bf16 };
// Where images are padded, cropped, flipped and normalised: in the loader's threads (host), or
// on the device after the copy of the raw uint8 images (device).
enum class AugmentOn { host, device };
// none: start fresh; latest: the newest good checkpoint of the checkpoint folder (--resume
// auto); file: the one named.
enum class ResumeFrom { none, latest, file };
DType compute_dtype(Precision p);
template <>
const NameTable<Mode>& names_of<Mode>();
template <>
const NameTable<Precision>& names_of<Precision>();
template <>
const NameTable<GradComm>& names_of<GradComm>();
template <>
const NameTable<AugmentOn>& names_of<AugmentOn>();

struct TrainConfig {
  ResNetConfig model;                            // in_channels and classes are taken from the data
  std::string data;                              // HDF5 file; empty: the synthetic dataset below
  std::string synth_path = "data/synthetic.h5";  // written once when no data is given
  DeviceKind device = DeviceKind::cpu;           // the CLI resolves --device auto
  Precision amp = Precision::bf16;               // cuda only
  bool deterministic = false;                    // cuda: bit-identical repeats
  bool cuda_graph = false;                       // cuda: each step replayed from a CUDA graph
  int64_t epochs = 1;
  int64_t steps = 0;     // > 0: stop after this many steps
  int batch_size = 256;  // per process
  Mode mode = Mode::ddp;
  int devices = 0;                     // dp: replicas; 0: 2 on the CPU, every visible GPU on CUDA
  bool dp_share_device = false;        // dp on CUDA, a test aid: every replica on device 0
  int global_batch_size = 0;           // > 0: split evenly over the ranks instead of --batch-size
  bool sync_bn = false;                // SyncBatchNorm: batch statistics over all ranks
  int accum_steps = 1;                 // micro-batches per optimizer step (gradient accumulation)
  double bucket_cap_mb = 25.0;         // DDP gradient bucket size
  bool overlap = true;                 // DDP: all-reduce buckets during backward
  GradComm grad_comm = GradComm::f32;  // DDP on CUDA: the all-reduces' dtype
  double comm_timeout_s = 600;         // a collective slower than this ends the job
  bool debug_collectives = false;      // check that all ranks issue the same collectives
  int debug_fail_rank = -1;            // tests only: this rank throws at debug_fail_step
  int64_t debug_fail_step = 0;
  int debug_hang_rank = -1;  // tests only: this rank sleeps for ever at debug_hang_step
  int64_t debug_hang_step = 0;
  double debug_startup_delay_ms = 0;  // tests only: a slow start-up (before loading the data)
  double debug_loader_delay_ms = 0;   // tests only: a slow loader (per batch)
  double debug_comm_delay_ms = 0;     // tests only: a slow all-reduce (per wait)
  bool debug_eval_nan = false;        // tests only: the evaluation's loss comes out NaN
  int eval_batch_size = 0;            // images per evaluation batch; 0: batch_size
  bool evaluate = true;               // on the test split after every epoch
  double lr = 0.1;
  OptimizerConfig optim;  // --optimizer and its settings
  Schedule schedule = Schedule::cosine;
  int64_t warmup_steps = 0;
  float label_smoothing = 0.0f;
  double memory_budget_mb = 4096;           // train images above this are streamed from disk
  int workers = limits::kWorkersFromCores;  // loader threads; 0: synchronous
  int prefetch_factor = 2;                  // ready batches per worker
  bool persistent_workers = false;
  bool augment = true;  // random crop with padding 4 and horizontal flip
  AugmentOn augment_on = AugmentOn::host;
  uint64_t seed = 0;
  int threads = 0;           // CPU backend threads; 0: all hardware threads
  std::string metrics_path;  // per-epoch JSON lines; empty: none
  std::string checkpoint_dir = "runs/checkpoints";
  // cuda: the file of cuDNN's algorithm searches, shared with later runs; "" (the default):
  // conv_algos.json in checkpoint_dir; "none": search in every process, keep nothing.
  std::string conv_algo_cache;
  int64_t checkpoint_every = 0;   // steps between checkpoints; 0: none on a schedule
  double checkpoint_minutes = 0;  // minutes between checkpoints; 0: none on a clock
  int keep_checkpoints = 3;       // the newest ones kept in checkpoint_dir
  bool final_checkpoint = true;   // a checkpoint when the run ends (a finished run is never lost)
  ResumeFrom resume = ResumeFrom::none;
  std::string resume_file;                     // resume == file: the checkpoint
  bool resume_force = false;                   // resume from another model, data file or world size
  std::string init_from;                       // the weights a new run starts from; "": fresh
  ProfileMode profile = ProfileMode::summary;  // trace: also a Chrome trace
  std::string trace_dir = "runs/trace";        // --profile trace: trace_rank<R>.json here
  std::string summary_path;                    // the run summary JSON; empty: none
  double peak_tflops = 0;                      // per device, for MFU; 0: by device name
  double log_interval_s = 5.0;                 // seconds between progress lines
  // Every setting as TOML, after the CLI's resolutions (`train --config` reads it back): the
  // checkpoints and the run summary keep it, so that a run can be repeated. Empty: none given.
  std::string effective_config;

  // Throws a ConfigError naming the first setting that is out of range.
  void validate() const;
};

// What `ringtrain train` runs without a GPU when the user chose no model or length: a
// configuration that finishes in a few minutes on a 2-core CPU.
void apply_cpu_quick_config(TrainConfig& config);
std::string describe(const TrainConfig& config);

}  // namespace ringtrain
