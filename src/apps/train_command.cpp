#include "train_command.hpp"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <map>

#include "cli.hpp"
#include "config_file.hpp"
#include "ringtrain/backend/devices.hpp"
#include "ringtrain/checkpoint/stop_signal.hpp"
#include "ringtrain/core/exit_codes.hpp"
#include "ringtrain/core/output_file.hpp"
#include "ringtrain/data/hdf5_io.hpp"
#include "ringtrain/distributed/world.hpp"
#include "ringtrain/parallel/backends.hpp"
#include "ringtrain/run/diagnose.hpp"
#include "ringtrain/run/trainer.hpp"

namespace ringtrain::cli {
namespace {

void add_model_flags(CLI::App& cmd, TrainConfig& c) {
  const std::map<std::string, int> models = {
      {"resnet18", 18}, {"resnet34", 34}, {"resnet50", 50}, {"resnet101", 101}, {"resnet152", 152}};
  CLI::Option* model =
      cmd.add_option("--model", c.model.depth, "resnet18 ... resnet152 (sets --depth)")
          ->transform(CLI::CheckedTransformer(models, CLI::ignore_case))
          ->default_function([] { return std::string(); });  // --depth holds it in a config file
  // Both set the depth: one of them, in a config file or on the command line.
  model->excludes(add_setting(cmd, "--depth", c.model.depth, "ResNet depth: 18, 34, 50, 101, 152")
                      ->check(CLI::IsMember({18, 34, 50, 101, 152}))
                      ->capture_default_str());
  add_setting(cmd, "--width", c.model.width, "channel width multiplier")
      ->check(real(limits::kMinWidth, limits::kMaxWidth))
      ->capture_default_str();
  add_choice(cmd, "--stem", c.model.stem, "cifar (3x3, no pool) or imagenet (7x7/2 + max pool)");
  add_switch(cmd, "--zero-init-residual", c.model.zero_init_residual,
             "start each residual branch's last BN at zero");
}

void add_optimizer_flags(CLI::App& cmd, TrainConfig& c) {
  add_setting(cmd, "--epochs", c.epochs, "epochs to train")
      ->check(whole(1, limits::kMaxEpochs))
      ->capture_default_str();
  add_setting(cmd, "--steps", c.steps, "stop after this many steps (overrides --epochs)", true)
      ->check(whole(1, limits::kMaxSteps, " (omit --steps to train --epochs)"));
  add_setting(cmd, "--batch-size", c.batch_size, "images per step and process")
      ->check(whole(1, limits::kMaxBatch))
      ->capture_default_str();
  add_setting(cmd, "--eval-batch-size", c.eval_batch_size,
              "images per evaluation batch and process (0: the training --batch-size)")
      ->check(whole(0, limits::kMaxBatch))
      ->capture_default_str();
  add_setting(cmd, "--lr", c.lr, "peak learning rate")
      ->check(positive(limits::kMaxLr))
      ->capture_default_str();
  add_choice(cmd, "--optimizer", c.optim.kind, "sgd, lars or adamw");
  add_setting(cmd, "--momentum", c.optim.momentum, "momentum (sgd, lars)")
      ->check(real(0, 1))
      ->capture_default_str();
  add_setting(cmd, "--weight-decay", c.optim.weight_decay,
              "weight decay (sgd, lars: L2 added to the gradient; adamw: decoupled)")
      ->check(real(0, 1))
      ->capture_default_str();
  add_switch(cmd, "--nesterov", c.optim.nesterov, "Nesterov momentum (sgd)");
  add_switch(cmd, "--decay-bn-and-bias,!--no-bn-decay", c.optim.decay_norm_and_bias,
             "no weight decay on batch-norm and bias parameters (lars never decays them)");
  add_setting(cmd, "--lars-eta", c.optim.lars_eta, "trust coefficient (lars)")
      ->check(positive(1))
      ->capture_default_str();
  add_setting(cmd, "--lars-epsilon", c.optim.lars_epsilon,
              "added to the trust ratio's denominator (lars)")
      ->check(real(0, 1))
      ->capture_default_str();
  add_setting(cmd, "--adam-beta1", c.optim.beta1, "first moment's decay rate (adamw)")
      ->check(real(0, 0.999999))
      ->capture_default_str();
  add_setting(cmd, "--adam-beta2", c.optim.beta2, "second moment's decay rate (adamw)")
      ->check(real(0, 0.999999))
      ->capture_default_str();
  add_setting(cmd, "--adam-eps", c.optim.adam_eps, "added to the root of the second moment (adamw)")
      ->check(positive(1))
      ->capture_default_str();
  add_choice(cmd, "--schedule", c.schedule,
             "constant, step, cosine, onecycle or poly (power 2, as LARS runs use)");
  add_setting(cmd, "--warmup-steps", c.warmup_steps, "linear warmup steps")
      ->check(whole(0, limits::kMaxSteps));
  add_setting(cmd, "--label-smoothing", c.label_smoothing, "label smoothing in [0, 1)")
      ->check(real(0, 0.999));
  add_setting(cmd, "--seed", c.seed, "seed for initialisation and shuffling")
      ->check(kSeed)
      ->capture_default_str();
}

void add_data_flags(CLI::App& cmd, TrainConfig& c) {
  add_setting(cmd, "--data", c.data,
              str_cat("HDF5 dataset (schema: docs/ARCHITECTURE.md; at most ", kMaxClasses,
                      " classes); default: synthetic data"))
      ->check(kFilePath);
  add_setting(cmd, "--synth-path", c.synth_path, "where the default synthetic dataset is written")
      ->capture_default_str();
  add_setting(cmd, "--workers", c.workers,
              "loader threads (0: assemble batches synchronously; auto: probe for enough; cores: "
              "from this rank's share of its cores, all but one on a GPU, at most 2 on the CPU)")
      ->transform(workers_or_auto())
      ->default_function([&c] { return workers_text(c.workers); })
      ->capture_default_str();
  add_setting(cmd, "--prefetch-factor", c.prefetch_factor, "ready batches per loader thread")
      ->check(whole(1, limits::kMaxPrefetch))
      ->capture_default_str();
  add_setting(cmd, "--memory-budget-mb", c.memory_budget_mb,
              "train images larger than this are streamed from the file window by window")
      ->check(positive(limits::kMaxMegabytes))
      ->capture_default_str();
  add_switch(cmd, "--persistent-workers", c.persistent_workers,
             "keep loader threads across epochs");
  add_switch(cmd, "!--no-augment", c.augment, "no random crop and flip");
  add_choice(cmd, "--augment-on", c.augment_on,
             "host: the loader threads pad, crop, flip and normalise; device: they only gather "
             "uint8 images, augmented on the device after the copy");
  add_switch(cmd, "!--no-eval", c.evaluate, "no evaluation on the test split after each epoch");
}

void add_device_flags(CLI::App& cmd, TrainConfig& c, JobFlags& job) {
  add_setting(cmd, "--device", job.device, "auto (CUDA when a GPU is visible), cpu or cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  add_choice(cmd, "--amp", c.amp, "CUDA compute dtype: bf16, fp16 (dynamic loss scaling) or off");
  add_switch(cmd, "--deterministic", c.deterministic,
             "CUDA: bit-identical repeats (cuDNN algorithms by rank, not timing)");
  add_switch(cmd, "--cuda-graph", c.cuda_graph,
             "CUDA: each training step captured once as a CUDA graph and replayed, one launch a "
             "step (one GPU per process, --amp bf16 or off, --accum-steps 1)");
  add_setting(cmd, "--conv-algo-cache", c.conv_algo_cache,
              "CUDA: the file that keeps cuDNN's algorithm searches for later runs on the same GPU "
              "model and cuDNN (default: conv_algos.json in --checkpoint-dir; none: search in "
              "every process)");
  add_setting(cmd, "--threads", c.threads,
              "CPU backend threads (0: the cores this rank may use: its affinity mask, shared with "
              "the ranks of the node bound to the same cores)")
      ->check(whole(0, limits::kMaxThreads));
  add_choice(cmd, "--mode", c.mode,
             "ddp: one process per device (under mpirun); dp: DataParallel in one process");
  add_setting(cmd, "--devices", c.devices,
              "--mode dp: replicas, one per device (default: 2 CPU replicas on the CPU, every "
              "visible GPU on CUDA)",
              true)
      ->check(whole(1, limits::kMaxDevices));
  add_switch(cmd, "--dp-share-device", c.dp_share_device,
             "--mode dp on CUDA, a TEST AID: every replica on device 0, each with its own "
             "streams, so the multi-replica path runs on one GPU (never a way to train; "
             "nothing changes on the CPU)");
  add_setting(cmd, "--global-batch-size", c.global_batch_size,
              "images per step over all ranks (instead of --batch-size)", true)
      ->check(whole(1, limits::kMaxGlobalBatch));
  add_switch(cmd, "--sync-bn", c.sync_bn, "SyncBatchNorm: batch statistics over all ranks");
  add_setting(cmd, "--accum-steps", c.accum_steps,
              "micro-batches per optimizer step; DDP communicates on the last one only")
      ->check(whole(1, limits::kMaxAccumSteps))
      ->capture_default_str();
  add_setting(cmd, "--bucket-cap-mb", c.bucket_cap_mb, "DDP gradient bucket size in MB")
      ->check(positive(limits::kMaxMegabytes))
      ->capture_default_str();
  add_switch(cmd, "!--no-overlap", c.overlap, "DDP: all-reduce only after the whole backward pass");
  add_choice(cmd, "--grad-comm", c.grad_comm,
             "DDP on CUDA: the gradients' all-reduce dtype: f32 (exact sums), or bf16 (half the "
             "bytes on the wire, a speed option: the sum over the ranks is rounded to bf16; "
             "micro-batches still accumulate in f32)");
  add_setting(cmd, "--comm-timeout", c.comm_timeout_s,
              "seconds after which a collective that has not completed ends the job")
      ->check(positive(limits::kMaxSeconds))
      ->capture_default_str();
  add_switch(cmd, "--debug-collectives", c.debug_collectives,
             "check that every rank issues the same collectives; report the first mismatch");
}

void add_output_flags(CLI::App& cmd, TrainConfig& c, JobFlags& job) {
  add_setting(cmd, "--metrics", c.metrics_path, "write per-epoch metrics as JSON lines here");
  add_setting(cmd, "--checkpoint-dir", c.checkpoint_dir, "where checkpoints go")
      ->capture_default_str();
  add_setting(cmd, "--checkpoint-every", c.checkpoint_every,
              "steps between checkpoints (0: only on SIGTERM/SIGUSR1 and at the end)")
      ->check(whole(0, limits::kMaxSteps));
  add_setting(cmd, "--checkpoint-minutes", c.checkpoint_minutes, "minutes between checkpoints")
      ->check(real(0, limits::kMaxSeconds));
  add_switch(cmd, "!--no-final-checkpoint", c.final_checkpoint,
             "do not write a checkpoint when the run ends (by default it is written)");
  add_setting(cmd, "--keep", c.keep_checkpoints, "checkpoints kept (the newest)")
      ->check(whole(1, limits::kMaxKeep))
      ->capture_default_str();
  add_setting(cmd, "--resume", job.resume,
              "auto (the newest complete checkpoint of --checkpoint-dir) or a checkpoint file");
  add_switch(cmd, "--resume-force", c.resume_force,
             "resume from a checkpoint of another model, data file or world size");
  add_setting(cmd, "--init-from", c.init_from,
              "start from the weights of a safetensors file (ringtrain export) or a checkpoint, "
              "not its optimizer state or position (that is --resume)")
      ->check(kFilePath);
  add_choice(cmd, "--profile", c.profile,
             "phase timing: off, summary (table and shares) or trace (also a Chrome trace)");
  add_setting(cmd, "--trace-dir", c.trace_dir, "--profile trace: where trace_rank<R>.json goes")
      ->capture_default_str();
  add_setting(cmd, "--summary", c.summary_path, "write the run summary as JSON here");
  add_setting(cmd, "--peak-tflops", c.peak_tflops, "device peak for MFU (default: by device name)")
      ->check(real(0, limits::kMaxTflops));
  add_setting(cmd, "--log-interval", c.log_interval_s, "seconds between progress lines")
      ->check(real(0, limits::kMaxSeconds))
      ->capture_default_str();
}

// Fault injection for the tests; hidden from --help.
void add_debug_flags(CLI::App& cmd, TrainConfig& c) {
  add_setting(cmd, "--debug-fail-rank", c.debug_fail_rank, "tests: make this rank fail")->group("");
  add_setting(cmd, "--debug-fail-step", c.debug_fail_step, "tests: the step it fails at")
      ->group("");
  add_setting(cmd, "--debug-hang-rank", c.debug_hang_rank, "tests: make this rank hang")->group("");
  add_setting(cmd, "--debug-hang-step", c.debug_hang_step, "tests: the step it hangs at")
      ->group("");
  add_setting(cmd, "--debug-startup-delay-ms", c.debug_startup_delay_ms, "tests: slow start-up")
      ->group("");
  add_setting(cmd, "--debug-loader-delay-ms", c.debug_loader_delay_ms, "tests: slow loader")
      ->check(real(0, limits::kMaxSeconds))
      ->group("");
  add_setting(cmd, "--debug-comm-delay-ms", c.debug_comm_delay_ms, "tests: slow all-reduce")
      ->check(real(0, limits::kMaxSeconds))
      ->group("");
  add_switch(cmd, "--debug-eval-nan", c.debug_eval_nan, "tests: a NaN test loss")->group("");
}

void add_train_flags(CLI::App& cmd, TrainConfig& c, JobFlags& job) {
  add_data_flags(cmd, c);
  add_device_flags(cmd, c, job);
  add_model_flags(cmd, c);
  add_optimizer_flags(cmd, c);
  add_output_flags(cmd, c, job);
  add_debug_flags(cmd, c);
  add_config_flags(cmd, job.print_config);
}

// --device auto takes CUDA when a GPU is visible. On the CPU, without an explicit model or run
// length, pick a run that ends in minutes, and say why.
void choose_device(const CLI::App& cmd, const std::string& device, TrainConfig& c) {
  const DeviceInventory devices = probe_devices();
  c.device = resolve_device(device, devices);
  if (c.device == DeviceKind::cuda) return;
  if (device == "cpu")
    spdlog::info("training on the CPU backend: --device cpu");
  else
    spdlog::info("{}: using the CPU backend", devices.why_none);
  for (const char* flag : {"--model", "--depth", "--width", "--batch-size", "--global-batch-size",
                           "--epochs", "--steps", "--lr"})
    if (cmd.count(flag) > 0) return;
  apply_cpu_quick_config(c);
  spdlog::info(
      "no GPU in use: running the CPU quick configuration ({}); set --depth, --width, "
      "--batch-size or --epochs to choose your own",
      describe(c));
}

void choose_resume(const std::string& resume, TrainConfig& c) {
  c.resume = resume.empty() ? ResumeFrom::none
                            : (resume == "auto" ? ResumeFrom::latest : ResumeFrom::file);
  c.resume_file = c.resume == ResumeFrom::file ? resume : "";
}

// The configuration the job runs: --device and --resume resolved, and all of it as TOML (the
// CPU quick configuration and the device chosen included) for the checkpoints and the summary.
void resolve_config(CLI::App& cmd, JobFlags& job, TrainConfig& config) {
  choose_device(cmd, job.device, config);
  job.device = to_string(config.device);
  choose_resume(job.resume, config);
  const EffectiveConfig effective = effective_config(cmd);
  RT_CHECK_AS(ConfigError, !job.print_config || effective.unreadable.empty(),
              "--print-config: cannot write ", effective.unreadable);
  if (!effective.unreadable.empty())
    spdlog::warn(
        "the effective configuration cannot hold {}: --config with it will not repeat "
        "this run",
        effective.unreadable);
  config.effective_config = effective.toml;
}

// No output of a run replaces one of its inputs: the data, the --config file, the checkpoint it
// resumes, the --init-from weights.
void check_run_outputs(CLI::App& cmd, const TrainConfig& c, int rank) {
  const CLI::Option* file = cmd.get_config_ptr();
  const std::string config_file = file && file->count() > 0 ? file->as<std::string>() : "";
  std::vector<FlagPath> outputs = {{"--summary", c.summary_path}, {"--metrics", c.metrics_path}};
  if (c.profile == ProfileMode::trace)
    outputs.push_back({"--trace-dir", str_cat(c.trace_dir, "/trace_rank", rank, ".json")});
  if (c.conv_algo_cache != "none") outputs.push_back({"--conv-algo-cache", c.conv_algo_cache});
  check_outputs_apart(outputs,
                      {{"--data", c.data},
                       {"--config", config_file},
                       {"--resume", c.resume_file},
                       {"--init-from", c.init_from}},
                      str_cat(cmd.get_name(), ": "));
}

// `train` or `diagnose`, on every rank of the job.
int run_job(CLI::App& cmd, bool training, JobFlags& job, TrainConfig& config) {
  // Before MPI_Init (Open MPI leaves SIGTERM and SIGUSR1 alone) and the data loading: a stop
  // requested during start-up is honoured at the first step boundary instead of killing.
  if (training) install_stop_signal_handlers();
  World& world = World::get();
  if (!world.is_root()) spdlog::set_level(spdlog::level::warn);  // rank 0 logs for the job
  try {
    resolve_config(cmd, job, config);
    check_run_outputs(cmd, config, world.rank());
    if (job.print_config) {
      if (world.is_root()) std::fputs(config.effective_config.c_str(), stdout);
      return exit_code::kOk;
    }
    // A run stopped by SIGTERM/SIGUSR1 exits with EX_TEMPFAIL: a job script requeues on it.
    if (training) return train(config).stopped ? exit_code::kStoppedBySignal : exit_code::kOk;
    const ProbeResults probes = run_probes(config);
    if (!world.is_root()) return exit_code::kOk;
    const Verdict verdict = judge(probes);
    std::fputs(format_diagnosis(probes, verdict).c_str(), stdout);
    if (!config.summary_path.empty()) write_diagnosis(config.summary_path, probes, verdict);
    return exit_code::kOk;
  } catch (const ConfigError&) {
    throw;  // every rank found it before training: they all leave with it
  } catch (const std::exception& e) {
    // One rank failing must end the whole job, never leave the others in a collective.
    if (world.size() > 1) world.abort(e.what(), exit_status(e));
    throw;
  }
}

}  // namespace

void add_train_commands(CLI::App& app, TrainCommands& t) {
  t.train = app.add_subcommand("train", "train a ResNet");
  add_train_flags(*t.train, t.config, t.job);
  t.diagnose = app.add_subcommand(
      "diagnose",
      "probe the loader, compute, all-reduce and full step of a training configuration (the "
      "same flags as train) and say what holds it back");
  add_train_flags(*t.diagnose, t.config, t.job);
}

int run_train_command(TrainCommands& t) {
  const bool training = t.train->parsed();
  CLI::App& cmd = training ? *t.train : *t.diagnose;
  apply_config_file(cmd);
  if (t.job.print_config) spdlog::set_level(spdlog::level::off);  // stdout holds the TOML alone
  return run_job(cmd, training, t.job, t.config);
}

}  // namespace ringtrain::cli
