#pragma once
// `ringtrain data synth|convert|import-images|import-cifar|inspect` and `ringtrain inspect`.
#include <CLI/CLI.hpp>
#include <string>

#include "ringtrain/data/synthetic.hpp"
#include "ringtrain/import/cifar10_archive.hpp"
#include "ringtrain/import/image_folder.hpp"

namespace ringtrain::cli {

// The dataset and checkpoint tools: what each was asked to do.
struct ToolCommands {
  CLI::App *synth = nullptr, *convert = nullptr, *import_images = nullptr, *import_cifar = nullptr,
           *inspect_data = nullptr, *inspect = nullptr;
  SynthConfig synth_config;
  ImportConfig import_config;
  CifarImportConfig cifar_config;
  std::string out, convert_dir, path, image_size;
  int gzip = 0;
  bool print_config = false;  // inspect --print-config
};

void add_tool_commands(CLI::App& app, ToolCommands& t);

// Runs the chosen one; throws on failure.
void run_tool_command(const ToolCommands& t);

}  // namespace ringtrain::cli
