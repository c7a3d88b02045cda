#include "export_command.hpp"

#include "cli.hpp"
#include "ringtrain/core/output_file.hpp"
#include "ringtrain/exchange/model_export.hpp"

namespace ringtrain::cli {

void add_export_command(CLI::App& app, ExportCommand& e) {
  e.cmd = app.add_subcommand(
      "export",
      "write a checkpoint's weights and batch-norm statistics as torchvision's ResNet state_dict "
      "in a safetensors file (docs/interop.md: loading it in PyTorch)");
  e.cmd->add_option("--checkpoint", e.checkpoint, "the checkpoint to export")
      ->required()
      ->check(kFilePath);
  e.cmd->add_option("--format", e.format, "safetensors")
      ->check(CLI::IsMember({"safetensors"}))
      ->capture_default_str();
  e.cmd->add_option("out", e.out, "the file to write (OUT.safetensors)")
      ->required()
      ->check(kFilePath);
  e.cmd->add_flag("--force", e.force, "replace OUT when it exists");
}

bool run_export_command(const ExportCommand& e) {
  if (!e.cmd->parsed()) return false;
  check_outputs_apart({{"out", e.out}}, {{"--checkpoint", e.checkpoint}}, "export: ");
  export_checkpoint(e.checkpoint, e.out, e.force);
  return true;
}

}  // namespace ringtrain::cli
