// ringtrain: one binary, subcommands `train`, `diagnose` and
// `data synth|convert|import-images|inspect`.
// Parses flags and calls the library; every error ends in one line on stderr and a non-zero exit.
#include <sched.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>

#include "ringtrain/backend/devices.hpp"
#include "ringtrain/core/exit_codes.hpp"
#include "ringtrain/core/version.hpp"
#include "ringtrain/data/cifar10_bin.hpp"
#include "ringtrain/data/hdf5_io.hpp"
#include "ringtrain/data/image_folder.hpp"
#include "ringtrain/data/synthetic.hpp"
#include "ringtrain/dist/world.hpp"
#include "ringtrain/train/checkpoint.hpp"
#include "ringtrain/train/diagnose.hpp"
#include "ringtrain/train/stop_signal.hpp"
#include "ringtrain/train/trainer.hpp"

namespace {

using namespace ringtrain;

std::string show_number(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

// A finite number in [lo, hi] ((lo, hi] when lo_open), whole for an integer flag. CLI11's own
// checks print the whole double range and let NaN through; this says what is wanted.
CLI::Validator bounded(double lo, double hi, bool whole, bool lo_open, const std::string& hint) {
  const std::string range =
      str_cat(lo_open ? "(" : "[", show_number(lo), ", ", show_number(hi), "]");
  return CLI::Validator(
      [=](std::string& value) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(value.c_str(), &end);
        if (value.empty() || *end != '\0') return "'" + value + "' is not a number";
        if (!std::isfinite(v)) return "must be a finite number in " + range + ", got " + value;
        if (whole && v != std::floor(v)) return "must be a whole number, got " + value;
        if (lo_open ? v <= lo : v < lo)
          return str_cat("must be ", lo_open ? "> " : ">= ", show_number(lo), hint, ", got ",
                         value);
        if (v > hi) return str_cat("must be <= ", show_number(hi), hint, ", got ", value);
        return "";
      },
      range);
}
CLI::Validator whole(double lo, double hi, const std::string& hint = "") {
  return bounded(lo, hi, true, false, hint);
}
CLI::Validator real(double lo, double hi) {
  return bounded(lo, hi, false, false, "");
}
CLI::Validator positive(double hi) {
  return bounded(0, hi, false, true, "");
}

// CLI11 reads "-1" as 2^64 - 1 for an unsigned flag: only digits are a seed.
const CLI::Validator kSeed(
    [](std::string& value) -> std::string {
      const std::string max = "18446744073709551615";
      const bool digits =
          !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
      if (digits && (value.size() < max.size() || (value.size() == max.size() && value <= max)))
        return "";
      return "must be a whole number in [0, 2^64), got " + value;
    },
    "[0, 2^64)");

// A thread count, or "auto" (passed on as -1).
CLI::Validator workers_or_auto() {
  const CLI::Validator count = whole(0, limits::kMaxWorkers);
  return CLI::Validator(
      [count](std::string& value) -> std::string {
        if (value != "auto") return count(value);
        value = "-1";
        return "";
      },
      str_cat("[0, ", limits::kMaxWorkers, "]|auto"));
}

// A file path, never empty: an empty --data would silently mean synthetic data (leaving the flag
// out is how to ask for that).
const CLI::Validator kFilePath(
    [](std::string& value) -> std::string {
      return value.empty() ? "an empty path: give an HDF5 file" : "";
    },
    "FILE");

// What the command line says before it becomes a TrainConfig: --device auto and --resume auto
// are resolved when the job starts.
struct JobFlags {
  std::string device = "auto";
  std::string resume;
};

// A flag whose value is one of an enum's names, parsed into the enum.
template <class E>
CLI::Option* add_choice(CLI::App& cmd, const std::string& flag, E& value, const std::string& help) {
  std::vector<std::string> names;
  for (const auto& entry : names_of<E>()) names.push_back(entry.first);
  return cmd
      .add_option_function<std::string>(
          flag, [&value, flag](const std::string& text) { value = parse<E>(flag, text); }, help)
      ->check(CLI::IsMember(names))
      ->default_str(to_string(value));
}

void add_model_flags(CLI::App& cmd, TrainConfig& c) {
  const std::map<std::string, int> models = {
      {"resnet18", 18}, {"resnet34", 34}, {"resnet50", 50}, {"resnet101", 101}, {"resnet152", 152}};
  cmd.add_option("--model", c.model.depth, "resnet18 ... resnet152 (sets --depth)")
      ->transform(CLI::CheckedTransformer(models, CLI::ignore_case));
  cmd.add_option("--depth", c.model.depth, "ResNet depth: 18, 34, 50, 101, 152")
      ->check(CLI::IsMember({18, 34, 50, 101, 152}))
      ->capture_default_str();
  cmd.add_option("--width", c.model.width, "channel width multiplier")
      ->check(real(limits::kMinWidth, limits::kMaxWidth))
      ->capture_default_str();
  add_choice(cmd, "--stem", c.model.stem, "cifar (3x3, no pool) or imagenet (7x7/2 + max pool)");
  cmd.add_flag("--zero-init-residual", c.model.zero_init_residual,
               "start each residual branch's last BN at zero");
}

void add_optimizer_flags(CLI::App& cmd, TrainConfig& c) {
  cmd.add_option("--epochs", c.epochs, "epochs to train")
      ->check(whole(1, limits::kMaxEpochs))
      ->capture_default_str();
  cmd.add_option("--steps", c.steps, "stop after this many steps (overrides --epochs)")
      ->check(whole(1, limits::kMaxSteps, " (omit --steps to train --epochs)"));
  cmd.add_option("--batch-size", c.batch_size, "images per step and process")
      ->check(whole(1, limits::kMaxBatch))
      ->capture_default_str();
  cmd.add_option("--lr", c.lr, "peak learning rate")
      ->check(positive(limits::kMaxLr))
      ->capture_default_str();
  cmd.add_option("--momentum", c.momentum, "SGD momentum")
      ->check(real(0, 1))
      ->capture_default_str();
  cmd.add_option("--weight-decay", c.weight_decay, "L2 weight decay (PyTorch semantics)")
      ->check(real(0, 1))
      ->capture_default_str();
  cmd.add_flag("--nesterov", c.nesterov, "Nesterov momentum");
  cmd.add_flag("!--decay-bn-and-bias,--no-bn-decay", c.decay_norm_and_bias,
               "no weight decay on batch-norm and bias parameters");
  add_choice(cmd, "--schedule", c.schedule, "constant, step, cosine or onecycle");
  cmd.add_option("--warmup-steps", c.warmup_steps, "linear warmup steps")
      ->check(whole(0, limits::kMaxSteps));
  cmd.add_option("--label-smoothing", c.label_smoothing, "label smoothing in [0, 1)")
      ->check(real(0, 0.999));
  cmd.add_option("--seed", c.seed, "seed for initialisation and shuffling")
      ->check(kSeed)
      ->capture_default_str();
}

void add_data_flags(CLI::App& cmd, TrainConfig& c) {
  cmd.add_option("--data", c.data,
                 str_cat("HDF5 dataset (schema: docs/ARCHITECTURE.md; at most ", kMaxClasses,
                         " classes); default: synthetic data"))
      ->check(kFilePath);
  cmd.add_option("--synth-path", c.synth_path, "where the default synthetic dataset is written")
      ->capture_default_str();
  cmd.add_option("--workers", c.workers,
                 "loader threads (0: assemble batches synchronously; auto: probe for enough)")
      ->transform(workers_or_auto())
      ->capture_default_str();
  cmd.add_option("--prefetch-factor", c.prefetch_factor, "ready batches per loader thread")
      ->check(whole(1, limits::kMaxPrefetch))
      ->capture_default_str();
  cmd.add_option("--memory-budget-mb", c.memory_budget_mb,
                 "train images larger than this are streamed from the file window by window")
      ->check(positive(limits::kMaxMegabytes))
      ->capture_default_str();
  cmd.add_flag("--persistent-workers", c.persistent_workers, "keep loader threads across epochs");
  cmd.add_flag("!--no-augment", c.augment, "no random crop and flip");
  add_choice(cmd, "--augment-on", c.augment_on,
             "host: the loader threads pad, crop, flip and normalise; device: they only gather "
             "uint8 images, augmented on the device after the copy");
  cmd.add_flag("!--no-eval", c.evaluate, "no evaluation on the test split after each epoch");
}

void add_device_flags(CLI::App& cmd, TrainConfig& c, JobFlags& job) {
  cmd.add_option("--device", job.device, "auto (CUDA when a GPU is visible), cpu or cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  add_choice(cmd, "--amp", c.amp, "CUDA compute dtype: bf16, fp16 (dynamic loss scaling) or off");
  cmd.add_flag("--deterministic", c.deterministic,
               "CUDA: bit-identical repeats (cuDNN algorithms by rank, not timing)");
  cmd.add_option("--threads", c.threads, "CPU backend threads (0: all)")
      ->check(whole(0, limits::kMaxThreads));
  add_choice(cmd, "--mode", c.mode,
             "ddp: one process per device (under mpirun); dp: DataParallel in one process");
  cmd.add_option("--devices", c.devices,
                 "--mode dp: replicas, one per device (default: 2 CPU replicas on the CPU, every "
                 "visible GPU on CUDA)")
      ->check(whole(1, limits::kMaxDevices));
  cmd.add_flag("--dp-share-device", c.dp_share_device,
               "--mode dp on CUDA, a TEST AID: every replica on device 0, each with its own "
               "streams, so the multi-replica path runs on one GPU (never a way to train; "
               "nothing changes on the CPU)");
  cmd.add_option("--global-batch-size", c.global_batch_size,
                 "images per step over all ranks (instead of --batch-size)")
      ->check(whole(1, limits::kMaxGlobalBatch));
  cmd.add_flag("--sync-bn", c.sync_bn, "SyncBatchNorm: batch statistics over all ranks");
  cmd.add_option("--accum-steps", c.accum_steps,
                 "micro-batches per optimizer step; DDP communicates on the last one only")
      ->check(whole(1, limits::kMaxAccumSteps))
      ->capture_default_str();
  cmd.add_option("--bucket-cap-mb", c.bucket_cap_mb, "DDP gradient bucket size in MB")
      ->check(positive(limits::kMaxMegabytes))
      ->capture_default_str();
  cmd.add_flag("!--no-overlap", c.overlap, "DDP: all-reduce only after the whole backward pass");
  cmd.add_option("--comm-timeout", c.comm_timeout_s,
                 "seconds after which a collective that has not completed ends the job")
      ->check(positive(limits::kMaxSeconds))
      ->capture_default_str();
  cmd.add_flag("--debug-collectives", c.debug_collectives,
               "check that every rank issues the same collectives; report the first mismatch");
}

void add_output_flags(CLI::App& cmd, TrainConfig& c, JobFlags& job) {
  cmd.add_option("--metrics", c.metrics_path, "write per-epoch metrics as JSON lines here");
  cmd.add_option("--checkpoint-dir", c.checkpoint_dir, "where checkpoints go")
      ->capture_default_str();
  cmd.add_option("--checkpoint-every", c.checkpoint_every,
                 "steps between checkpoints (0: only on SIGTERM/SIGUSR1)")
      ->check(whole(0, limits::kMaxSteps));
  cmd.add_option("--checkpoint-minutes", c.checkpoint_minutes, "minutes between checkpoints")
      ->check(real(0, limits::kMaxSeconds));
  cmd.add_option("--keep", c.keep_checkpoints, "checkpoints kept (the newest)")
      ->check(whole(1, limits::kMaxKeep))
      ->capture_default_str();
  cmd.add_option("--resume", job.resume,
                 "auto (the newest complete checkpoint of --checkpoint-dir) or a checkpoint file");
  cmd.add_flag("--resume-force", c.resume_force,
               "resume from a checkpoint of another model, data file or world size");
  add_choice(cmd, "--profile", c.profile,
             "phase timing: off, summary (table and shares) or trace (also a Chrome trace)");
  cmd.add_option("--trace-dir", c.trace_dir, "--profile trace: where trace_rank<R>.json goes")
      ->capture_default_str();
  cmd.add_option("--summary", c.summary_path, "write the run summary as JSON here");
  cmd.add_option("--peak-tflops", c.peak_tflops, "device peak for MFU (default: by device name)")
      ->check(real(0, limits::kMaxTflops));
  cmd.add_option("--log-interval", c.log_interval_s, "seconds between progress lines")
      ->check(real(0, limits::kMaxSeconds))
      ->capture_default_str();
}

// Fault injection for the tests; hidden from --help.
void add_debug_flags(CLI::App& cmd, TrainConfig& c) {
  cmd.add_option("--debug-fail-rank", c.debug_fail_rank, "tests: make this rank fail")->group("");
  cmd.add_option("--debug-fail-step", c.debug_fail_step, "tests: the step it fails at")->group("");
  cmd.add_option("--debug-hang-rank", c.debug_hang_rank, "tests: make this rank hang")->group("");
  cmd.add_option("--debug-hang-step", c.debug_hang_step, "tests: the step it hangs at")->group("");
  cmd.add_option("--debug-startup-delay-ms", c.debug_startup_delay_ms, "tests: slow start-up")
      ->group("");
  cmd.add_option("--debug-loader-delay-ms", c.debug_loader_delay_ms, "tests: slow loader")
      ->check(real(0, limits::kMaxSeconds))
      ->group("");
  cmd.add_option("--debug-comm-delay-ms", c.debug_comm_delay_ms, "tests: slow all-reduce")
      ->check(real(0, limits::kMaxSeconds))
      ->group("");
  cmd.add_flag("--debug-eval-nan", c.debug_eval_nan, "tests: a NaN test loss")->group("");
}

void add_train_flags(CLI::App& cmd, TrainConfig& c, JobFlags& job) {
  add_data_flags(cmd, c);
  add_device_flags(cmd, c, job);
  add_model_flags(cmd, c);
  add_optimizer_flags(cmd, c);
  add_output_flags(cmd, c, job);
  add_debug_flags(cmd, c);
}

// --device auto takes CUDA when a GPU is visible. On the CPU, without an explicit model or run
// length, pick a run that ends in minutes, and say why.
void choose_device(const CLI::App& cmd, const std::string& device, TrainConfig& c) {
  const DeviceInventory devices = probe_devices();
  const bool cuda = device == "auto" ? devices.cuda_devices > 0 : device == "cuda";
  RT_CHECK(!cuda || devices.cuda_devices > 0, "--device cuda, but ", devices.why_none);
  c.device = cuda ? DeviceKind::cuda : DeviceKind::cpu;
  if (cuda) return;
  spdlog::info("training on the CPU backend: {}",
               device == "cpu" ? "--device cpu" : devices.why_none);
  for (const char* flag : {"--model", "--depth", "--width", "--batch-size", "--global-batch-size",
                           "--epochs", "--steps", "--lr"})
    if (cmd.count(flag) > 0) return;
  apply_cpu_quick_config(c);
  spdlog::info(
      "no GPU in use: running the CPU quick configuration ({}); set --depth, --width, "
      "--batch-size or --epochs to choose your own",
      describe(c));
}

// Every rank of a job parses the same command line and fails alike: rank 0 prints for all.
int parse_failure(const CLI::App& app, const CLI::ParseError& e) {
  if (launch_rank() == 0) {
    app.exit(e);
  } else if (e.get_exit_code() != 0) {
    // Note: mpirun ends the job when its first process fails; the others wait a moment so that
    // rank 0's message is out by then.
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  return e.get_exit_code() == 0 ? exit_code::kOk : exit_code::kUsage;
}

int exit_status(const std::exception& e) {
  if (dynamic_cast<const ConfigError*>(&e)) return exit_code::kUsage;
  if (dynamic_cast<const DivergedError*>(&e)) return exit_code::kDiverged;
  return exit_code::kError;
}

void choose_resume(const std::string& resume, TrainConfig& c) {
  c.resume = resume.empty() ? ResumeFrom::none
                            : (resume == "auto" ? ResumeFrom::latest : ResumeFrom::file);
  c.resume_file = c.resume == ResumeFrom::file ? resume : "";
}

// `train` or `diagnose`, on every rank of the job.
int run_job(const CLI::App& cmd, bool training, const JobFlags& job, TrainConfig& config) {
  // Before MPI_Init (Open MPI leaves SIGTERM and SIGUSR1 alone) and the data loading: a stop
  // requested during start-up is honoured at the first step boundary instead of killing.
  if (training) install_stop_signal_handlers();
  World& world = World::get();
  if (!world.is_root()) spdlog::set_level(spdlog::level::warn);  // rank 0 logs for the job
  try {
    choose_device(cmd, job.device, config);
    choose_resume(job.resume, config);
    // A run stopped by SIGTERM/SIGUSR1 exits with EX_TEMPFAIL: a job script requeues on it.
    if (training) return train(config).stopped ? exit_code::kStoppedBySignal : exit_code::kOk;
    const ProbeResults probes = run_probes(config);
    if (world.is_root()) std::fputs(format_diagnosis(probes, judge(probes)).c_str(), stdout);
    return exit_code::kOk;
  } catch (const ConfigError&) {
    throw;  // every rank found it before training: they all leave with it
  } catch (const std::exception& e) {
    // One rank failing must end the whole job, never leave the others in a collective.
    if (world.size() > 1) world.abort(e.what(), exit_status(e));
    throw;
  }
}

// The dataset and checkpoint tools: what each was asked to do.
struct ToolCommands {
  CLI::App *synth = nullptr, *convert = nullptr, *import_images = nullptr, *inspect_data = nullptr,
           *inspect = nullptr;
  SynthConfig synth_config;
  ImportConfig import_config;
  std::string out, convert_dir, path, image_size;
  int gzip = 0;
};

void add_synth_command(CLI::App& data, ToolCommands& t) {
  SynthConfig& synth = t.synth_config;
  t.synth = data.add_subcommand("synth", "write a learnable synthetic dataset");
  t.synth->add_option("--out", t.out, "HDF5 file to write")->required();
  t.synth->add_option("--train", synth.train_count, "training images")
      ->check(whole(1, kMaxSynthImages))
      ->capture_default_str();
  t.synth->add_option("--test", synth.test_count, "test images")
      ->check(whole(1, kMaxSynthImages))
      ->capture_default_str();
  t.synth->add_option("--height", synth.height, "image height")
      ->check(whole(1, kMaxSynthSide))
      ->capture_default_str();
  t.synth->add_option("--width", synth.width, "image width")
      ->check(whole(1, kMaxSynthSide))
      ->capture_default_str();
  t.synth->add_option("--channels", synth.channels, "1 or 3")
      ->check(CLI::IsMember({1, 3}))
      ->capture_default_str();
  t.synth->add_option("--classes", synth.classes, "number of classes")
      ->check(CLI::Range(2, 1000))
      ->capture_default_str();
  t.synth->add_option("--seed", synth.seed, "generator seed")->check(kSeed)->capture_default_str();
  t.synth->add_option("--gzip", t.gzip, "compression level 0-9")->check(CLI::Range(0, 9));
}

// The cores this process may run on (its CPU affinity), at least 1.
int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// --size HxW (or N), checked when parsed: a bad value is a usage error.
const CLI::Validator kImageSize(
    [](std::string& value) -> std::string {
      int height = 0, width = 0;
      try {
        parse_image_size(value, height, width);
      } catch (const ConfigError& e) {
        return e.what();
      }
      return "";
    },
    "HxW");

void add_import_command(CLI::App& data, ToolCommands& t) {
  ImportConfig& c = t.import_config;
  c.workers = std::min(available_cores(), limits::kMaxWorkers);
  t.import_images = data.add_subcommand(
      "import-images",
      "convert a folder of images in class folders (DIR/train/<class>/*.png|jpg|jpeg and "
      "DIR/test/<class>/..., as torchvision's ImageFolder reads them) to HDF5");
  t.import_images->add_option("dir", c.dir, "folder holding train/ and test/")->required();
  t.import_images->add_option("out", c.out, "HDF5 file to write")->required()->check(kFilePath);
  t.import_images->add_option("--workers", c.workers, "decoding threads (default: all cores)")
      ->check(whole(1, limits::kMaxWorkers))
      ->capture_default_str();
  t.import_images
      ->add_option("--size", t.image_size,
                   "store HxW images: each scaled to cover HxW (bilinear, antialiased), then "
                   "centre-cropped; without it every image must have the first one's size")
      ->check(kImageSize);
  t.import_images->add_flag("--force", c.force, "replace OUT if it exists");
  t.import_images->add_option("--gzip", c.gzip, "compression level 0-9")->check(CLI::Range(0, 9));
}

void add_tool_commands(CLI::App& app, ToolCommands& t) {
  CLI::App* data = app.add_subcommand("data", "dataset tools");
  data->require_subcommand(1);
  add_synth_command(*data, t);
  add_import_command(*data, t);
  t.convert = data->add_subcommand(
      "convert", "convert the CIFAR-10 binary distribution (cifar-10-batches-bin/) to HDF5");
  t.convert->add_option("--from", "input format")
      ->check(CLI::IsMember({"cifar10-bin"}))
      ->default_str("cifar10-bin");
  t.convert->add_option("dir", t.convert_dir, "folder with data_batch_1..5.bin and test_batch.bin")
      ->required();
  t.convert->add_option("--out", t.out, "HDF5 file to write")->required();
  t.convert->add_option("--gzip", t.gzip, "compression level 0-9")->check(CLI::Range(0, 9));
  t.inspect_data = data->add_subcommand("inspect", "summarise an HDF5 dataset");
  t.inspect_data->add_option("file", t.path, "HDF5 file")->required()->check(kFilePath);
  t.inspect = app.add_subcommand(
      "inspect",
      "summarise a checkpoint (its meta, every dataset verified against its checksum) or a "
      "dataset (as data inspect)");
  t.inspect->add_option("file", t.path, "checkpoint or HDF5 dataset")->required()->check(kFilePath);
}

// `data import-images`, saying on stderr how far it is (each tenth, once it has run a second)
// and what it wrote.
void run_import(const ToolCommands& t) {
  ImportConfig c = t.import_config;
  if (!t.image_size.empty()) parse_image_size(t.image_size, c.height, c.width);
  const auto start = std::chrono::steady_clock::now();
  const auto seconds = [start] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  int64_t next_tenth = 1;
  c.progress = [&](int64_t done, int64_t total) {
    if (done * 10 < next_tenth * total) return;
    next_tenth = done * 10 / total + 1;
    if (seconds() >= 1)
      fmt::print(stderr, "import-images: {}/{} images decoded ({}%), {:.1f} s\n", done, total,
                 100 * done / total, seconds());
  };
  const ImportSummary s = import_image_folder(c);
  const double elapsed = seconds();
  fmt::print(stderr,
             "import-images: wrote {}: {} train and {} test images, {} classes, {}x{} RGB, in "
             "{:.2f} s ({:.0f} images/s, --workers {})\n",
             c.out, s.train, s.test, s.classes, s.height, s.width, elapsed,
             (s.train + s.test) / elapsed, c.workers);
  if (s.skipped > 0)
    fmt::print(stderr,
               "import-images: skipped {} files that are not .png, .jpg or .jpeg images in a "
               "class folder (the first: {})\n",
               s.skipped, s.first_skipped);
}

void run_tool_command(const ToolCommands& t) {
  if (*t.convert) {
    const Dataset d = read_cifar10_bin(t.convert_dir);
    write_hdf5_dataset(t.out, d, t.gzip);
    spdlog::info("wrote {}: {} train and {} test images", t.out, d.train.count, d.test.count);
  } else if (*t.import_images) {
    run_import(t);
  } else if (*t.inspect) {
    std::fputs((is_checkpoint(t.path) ? inspect_checkpoint(t.path)
                                      : inspect_dataset(read_hdf5_dataset(t.path), t.path))
                   .c_str(),
               stdout);
  } else if (*t.inspect_data) {
    std::fputs(inspect_dataset(read_hdf5_dataset(t.path), t.path).c_str(), stdout);
  } else if (*t.synth) {
    const SynthConfig& c = t.synth_config;
    write_hdf5_dataset(t.out, make_synthetic(c), t.gzip);
    spdlog::info("wrote {}: {} train and {} test images {}x{}x{}, {} classes", t.out, c.train_count,
                 c.test_count, c.height, c.width, c.channels, c.classes);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ringtrain: data-parallel ResNet training on CIFAR-10 that keeps every GPU busy"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "ringtrain " RINGTRAIN_VERSION);
  TrainConfig train_config;
  JobFlags job;
  CLI::App* train_cmd = app.add_subcommand("train", "train a ResNet");
  add_train_flags(*train_cmd, train_config, job);
  CLI::App* diagnose_cmd = app.add_subcommand(
      "diagnose",
      "probe the loader, compute, all-reduce and full step of a training configuration (the "
      "same flags as train) and say what holds it back");
  add_train_flags(*diagnose_cmd, train_config, job);
  ToolCommands tools;
  add_tool_commands(app, tools);
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return str_cat("ringtrain: error: ", e.what(), "\nRun with --help for more information.\n");
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return parse_failure(app, e);
  }
  spdlog::set_pattern("[%H:%M:%S] %v");
  try {
    if (*train_cmd || *diagnose_cmd)
      return run_job(*train_cmd ? *train_cmd : *diagnose_cmd, train_cmd->parsed(), job,
                     train_config);
    run_tool_command(tools);
  } catch (const std::exception& e) {
    const int status = exit_status(e);
    if (status != exit_code::kUsage || launch_rank() == 0)
      std::fprintf(stderr, "ringtrain: error: %s\n", e.what());
    return status;
  }
  return exit_code::kOk;
}
