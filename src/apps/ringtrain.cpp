// ringtrain: one binary, subcommands `train`, `diagnose`, `eval`, `predict`, `inspect`,
// `export` and `data synth|convert|import-images|inspect`, each in its own file of src/apps/.
// Parses flags and calls the library; every error ends in one line on stderr and a non-zero exit.
#include <spdlog/spdlog.h>

#include <unistd.h>
#include <CLI/CLI.hpp>

#include <climits>
#include <cstdio>
#include <cstring>
#include <vector>

#include "cli.hpp"
#include "data_commands.hpp"
#include "eval_command.hpp"
#include "export_command.hpp"
#include "predict_command.hpp"
#include "ringtrain/core/exit_codes.hpp"
#include "ringtrain/core/version.hpp"
#include "ringtrain/distributed/world.hpp"
#include "train_command.hpp"
#include "version_text.hpp"

namespace {

// Note: OpenBLAS (only the f64 reference GEMMs use it) starts its thread pool in its library
// constructor, before main() and before any constructor of this program, and under an
// address-space limit (ulimit -v) of about 1.1 GiB that pool hangs the process at exit. Setting
// OPENBLAS_NUM_THREADS=1 in the process is too late even from .preinit_array (which does run
// first): libc's own start-up then resets the environment to the one the kernel passed. So this
// entry of .preinit_array, which runs before every library's constructor, executes the program
// again with OPENBLAS_NUM_THREADS=1 added, once (the same process: its PID, arguments and
// name stay). Without /proc, or when exec fails, the program goes on as it was.
void pin_openblas_to_one_thread(int, char** argv, char** env) {
  static char pinned[] = "OPENBLAS_NUM_THREADS=1";
  constexpr std::size_t kName = sizeof("OPENBLAS_NUM_THREADS=") - 1;
  std::vector<char*> next;
  for (char** e = env; *e != nullptr; ++e) {
    if (std::strcmp(*e, pinned) == 0) return;
    if (std::strncmp(*e, pinned, kName) != 0) next.push_back(*e);
  }
  next.push_back(pinned);
  next.push_back(nullptr);
  char self[PATH_MAX];
  const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0) return;
  self[length] = '\0';
  execve(self, argv, next.data());
}
[[gnu::section(".preinit_array"),
  gnu::used]] void (*const pin_openblas)(int, char**, char**) = pin_openblas_to_one_thread;

}  // namespace

int main(int argc, char** argv) {
  using namespace ringtrain;
  CLI::App app{"ringtrain: data-parallel ResNet training on CIFAR-10 that keeps every GPU busy"};
  app.require_subcommand(1);
  app.footer(
      "Exit status: 0 done; 1 failed (a missing or malformed file, an MPI or device error, a "
      "failing rank); 2 usage or configuration error, nothing was done (the message says which "
      "flag); 65 training diverged (a NaN or infinite loss: rerunning fails the same way); 75 "
      "stopped by SIGTERM or SIGUSR1 after writing a checkpoint (requeue: --resume auto "
      "continues).");
  app.set_version_flag("--version", [] { return cli::version_text(); });
  cli::TrainCommands train;
  cli::add_train_commands(app, train);
  cli::ToolCommands tools;
  cli::add_tool_commands(app, tools);
  cli::EvalCommand eval;
  cli::add_eval_command(app, eval);
  cli::PredictCommand predict;
  cli::add_predict_command(app, predict);
  cli::ExportCommand export_command;
  cli::add_export_command(app, export_command);
  cli::check_every_value(app);
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return str_cat("ringtrain: error: ", e.what(), "\nRun with --help for more information.\n");
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli::parse_failure(app, e);
  }
  spdlog::set_pattern("[%H:%M:%S] %v");
  try {
    if (train.chosen()) return cli::run_train_command(train);
    if (eval.chosen()) return cli::run_eval_command(eval);
    if (predict.chosen()) return cli::run_predict_command(predict);
    if (cli::run_export_command(export_command)) return exit_code::kOk;
    cli::run_tool_command(tools);
  } catch (const std::exception& e) {
    const int status = cli::exit_status(e);
    if (status != exit_code::kUsage || launch_rank() == 0)
      std::fprintf(stderr, "ringtrain: error: %s\n", e.what());
    return status;
  }
  return exit_code::kOk;
}
