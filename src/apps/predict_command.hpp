#pragma once
// `ringtrain predict`: a checkpoint's model applied to PNG or JPEG files.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace ringtrain::cli {

struct PredictCommand {
  CLI::App* cmd = nullptr;
  std::string checkpoint, device = "auto";
  std::vector<std::string> images;
  int top = 5, threads = 0;
  bool json = false;
  bool chosen() const { return cmd->parsed(); }
};
void add_predict_command(CLI::App& app, PredictCommand& p);

// Prints every image's top classes; returns the exit status: 1 when an image could not be read
// (the others are still predicted and printed, the unreadable ones named on stderr).
int run_predict_command(const PredictCommand& p);

}  // namespace ringtrain::cli
