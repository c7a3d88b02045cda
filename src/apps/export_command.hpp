#pragma once
// `ringtrain export`: a checkpoint's model as a file other frameworks read.
#include <CLI/CLI.hpp>
#include <string>

namespace ringtrain::cli {

struct ExportCommand {
  CLI::App* cmd = nullptr;
  std::string checkpoint, format = "safetensors", out;
  bool force = false;
};

void add_export_command(CLI::App& app, ExportCommand& e);

// Runs it when it was chosen (returns whether it was); throws on failure.
bool run_export_command(const ExportCommand& e);

}  // namespace ringtrain::cli
