#pragma once
// `ringtrain eval`: a checkpoint's model measured on a split of a labelled HDF5 dataset.
#include <CLI/CLI.hpp>
#include <string>

namespace ringtrain::cli {

struct EvalCommand {
  CLI::App* cmd = nullptr;
  std::string checkpoint, data, split = "test", out, device = "auto";
  int batch_size = 256, threads = 0, workers = 2;
  bool chosen() const { return cmd->parsed(); }
};
void add_eval_command(CLI::App& app, EvalCommand& e);

// Runs it on every rank of the job (each evaluates its shard; rank 0 prints); returns the exit
// status.
int run_eval_command(const EvalCommand& e);

}  // namespace ringtrain::cli
