#include "data_commands.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "cli.hpp"
#include "ringtrain/checkpoint/checkpoint.hpp"
#include "ringtrain/core/cpus.hpp"
#include "ringtrain/core/input_file.hpp"
#include "ringtrain/core/output_file.hpp"
#include "ringtrain/data/hdf5_io.hpp"
#include "ringtrain/data/provenance.hpp"
#include "ringtrain/import/cifar10_bin.hpp"
#include "ringtrain/run_config/config.hpp"

namespace ringtrain::cli {
namespace {

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
  c.workers = std::min(affinity_cores(), limits::kMaxWorkers);
  t.import_images = data.add_subcommand(
      "import-images",
      "convert a folder of images in class folders (DIR/train/<class>/*.png|jpg|jpeg and "
      "DIR/test/<class>/..., as torchvision's ImageFolder reads them) to HDF5");
  t.import_images->add_option("dir", c.dir, "folder holding train/ and test/")
      ->required()
      ->check(kFolderPath);
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
  if (s.links > 0)
    fmt::print(stderr,
               "import-images: warning: did not follow {} links to folders inside class folders "
               "(the first: {}): import what they link to as folders of their own, or copy it "
               "in\n",
               s.links, s.first_link);
}

void add_import_cifar_command(CLI::App& data, ToolCommands& t) {
  CifarImportConfig& c = t.cifar_config;
  t.import_cifar = data.add_subcommand(
      "import-cifar",
      "convert an official CIFAR-10 archive, cifar-10-python.tar.gz or cifar-10-binary.tar.gz as "
      "downloaded, to HDF5 (its MD5 checked against the published one)");
  t.import_cifar->add_option("archive", c.archive, "the .tar.gz")->required()->check(kFilePath);
  t.import_cifar->add_option("out", c.out, "HDF5 file to write")->required()->check(kFilePath);
  t.import_cifar->add_flag("--force", c.force, "replace OUT if it exists");
  t.import_cifar->add_option("--gzip", c.gzip, "compression level 0-9")->check(CLI::Range(0, 9));
}

// `data import-cifar`, saying on stderr each member read, an MD5 that is not the published one,
// and what it wrote.
void run_import_cifar(const ToolCommands& t) {
  CifarImportConfig c = t.cifar_config;
  const auto start = std::chrono::steady_clock::now();
  c.report = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
  const CifarImportSummary s = import_cifar10_archive(c);
  fmt::print(stderr,
             "import-cifar: wrote {}: {} train and {} test images, {} classes, 32x32 RGB, from the "
             "{} archive {} (md5 {}, {}), in {:.2f} s\n",
             c.out, s.train, s.test, s.classes,
             s.format == CifarFormat::python ? "python" : "binary", c.archive, s.md5,
             s.md5_published ? "the published one" : "NOT the published one",
             std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

// `data convert`: the binary distribution's folder, with its provenance.
void run_convert(const ToolCommands& t) {
  std::vector<FlagPath> batches;
  for (const char* name :
       {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
        "data_batch_5.bin", "test_batch.bin", "batches.meta.txt"})
    batches.push_back({"dir", (std::filesystem::path(t.convert_dir) / name).string()});
  check_outputs_apart({{"--out", t.out}}, batches, "data convert: ");
  check_output_file(t.out, true, "data convert: ");
  const Dataset d = read_cifar10_bin(t.convert_dir);
  Provenance p;
  p.importer = "ringtrain data convert";
  p.source_dir = std::filesystem::canonical(t.convert_dir).string();
  FileAttributes attributes;
  add_provenance(p, d, attributes);
  write_hdf5_dataset(t.out, d, t.gzip, attributes);
  spdlog::info("wrote {}: {} train and {} test images", t.out, d.train.count, d.test.count);
}

// `inspect CK --print-config`: the TOML the checkpoint's run was configured with (its meta
// verified against its checksum).
std::string checkpoint_config(const std::string& path) {
  RT_CHECK_AS(ConfigError, is_checkpoint(path), "inspect --print-config: ", path,
              " is not a checkpoint (only checkpoints hold a configuration)");
  const CheckpointMeta meta = read_checkpoint_meta(path);
  RT_CHECK(!meta.effective_config.empty(), "inspect --print-config: ", path,
           " holds no configuration: ringtrain ", meta.version,
           " wrote it before checkpoints kept one (its settings in short: ", meta.config, ")");
  return meta.effective_config;
}

// `inspect FILE`: a checkpoint's summary (or with --print-config its configuration), or a
// dataset's.
std::string inspect_file(const ToolCommands& t) {
  if (t.print_config) return checkpoint_config(t.path);
  return is_checkpoint(t.path) ? inspect_checkpoint(t.path)
                               : inspect_dataset(read_hdf5_dataset(t.path), t.path);
}

}  // namespace

void add_tool_commands(CLI::App& app, ToolCommands& t) {
  CLI::App* data = app.add_subcommand("data", "dataset tools");
  data->require_subcommand(1);
  add_synth_command(*data, t);
  add_import_command(*data, t);
  add_import_cifar_command(*data, t);
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
  t.inspect->add_flag("--print-config", t.print_config,
                      "write the effective configuration of the run that wrote the checkpoint "
                      "(TOML for train --config) instead of the summary");
}

void run_tool_command(const ToolCommands& t) {
  if (*t.convert) {
    run_convert(t);
  } else if (*t.import_images) {
    run_import(t);
  } else if (*t.import_cifar) {
    run_import_cifar(t);
  } else if (*t.inspect) {
    check_input_file(t.path, "inspect", "a checkpoint or an HDF5 dataset");
    std::fputs(inspect_file(t).c_str(), stdout);
  } else if (*t.inspect_data) {
    std::fputs(inspect_dataset(read_hdf5_dataset(t.path), t.path).c_str(), stdout);
  } else if (*t.synth) {
    const SynthConfig& c = t.synth_config;
    check_output_file(t.out, true, "data synth: ");  // its folder made; replaced when it exists
    const Dataset d = make_synthetic(c);
    write_hdf5_dataset(t.out, d, t.gzip, synthetic_attributes(c, d, "ringtrain data synth"));
    spdlog::info("wrote {}: {} train and {} test images {}x{}x{}, {} classes", t.out, c.train_count,
                 c.test_count, c.height, c.width, c.channels, c.classes);
  }
}

}  // namespace ringtrain::cli
