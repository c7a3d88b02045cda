#pragma once
// `ringtrain train` and `ringtrain diagnose`: the same flags, one TrainConfig.
#include <CLI/CLI.hpp>
#include <string>

#include "ringtrain/run_config/config.hpp"

namespace ringtrain::cli {

// What the command line says before it becomes a TrainConfig: --device auto and --resume auto
// are resolved when the job starts (--device then holds the device chosen).
struct JobFlags {
  std::string device = "auto";
  std::string resume;
  bool print_config = false;  // --print-config: write the effective configuration, run nothing
};

struct TrainCommands {
  CLI::App *train = nullptr, *diagnose = nullptr;
  TrainConfig config;
  JobFlags job;
  bool chosen() const { return *train || *diagnose; }
};
void add_train_commands(CLI::App& app, TrainCommands& t);

// Runs the chosen one on every rank of the job; returns the exit status.
int run_train_command(TrainCommands& t);

}  // namespace ringtrain::cli
