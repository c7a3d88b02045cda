#include "predict_command.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "ringtrain/core/exit_codes.hpp"
#include "ringtrain/core/json_text.hpp"
#include "ringtrain/evaluation/inference.hpp"
#include "ringtrain/run_config/config.hpp"

namespace ringtrain::cli {
namespace {

std::string format_text(const std::vector<Prediction>& predictions,
                        const std::vector<std::string>& names) {
  std::string s;
  for (const Prediction& p : predictions) {
    if (!p.error.empty()) continue;
    s += p.path + "\n";
    for (size_t i = 0; i < p.classes.size(); ++i)
      s += fmt::format("  {}. {:<20} {:7.3f}%\n", i + 1, names[size_t(p.classes[i])],
                       100 * p.probabilities[i]);
  }
  return s;
}

nlohmann::json predictions_json(const std::string& checkpoint,
                                const std::vector<Prediction>& predictions,
                                const std::vector<std::string>& names) {
  nlohmann::json images = nlohmann::json::array();
  for (const Prediction& p : predictions) {
    nlohmann::json top = nlohmann::json::array();
    for (size_t i = 0; i < p.classes.size(); ++i)
      top.push_back({{"class", p.classes[i]},
                     {"name", names[size_t(p.classes[i])]},
                     {"probability", p.probabilities[i]}});
    nlohmann::json image = {{"image", p.path}};
    if (p.error.empty()) {
      image["top"] = top;
    } else {
      image["error"] = p.error;
    }
    images.push_back(image);
  }
  return {{"checkpoint", checkpoint}, {"predictions", images}};
}

// An image file: never empty, never a folder (predict reads the files named, not a folder's).
const CLI::Validator kImageFile(
    [](std::string& value) -> std::string {
      std::error_code error;
      if (value.empty()) return "an empty argument: name an image file";
      if (std::filesystem::is_directory(value, error))
        return str_cat("'", value, "' is a folder: name its image files (", value, "/*.png)");
      return "";
    },
    "FILE");

}  // namespace

void add_predict_command(CLI::App& app, PredictCommand& p) {
  p.cmd = app.add_subcommand(
      "predict",
      "the most probable classes of PNG or JPEG images by a checkpoint's model (each image "
      "scaled to cover the model's image size and centre-cropped, as data import-images --size "
      "does)");
  p.cmd->add_option("--checkpoint", p.checkpoint, "checkpoint file")->required()->check(kFilePath);
  p.cmd->add_option("images", p.images, "PNG or JPEG files")->required()->check(kImageFile);
  p.cmd->add_option("--top", p.top, "classes to show per image (at most the model's classes)")
      ->check(whole(1, 1000000))
      ->capture_default_str();
  p.cmd->add_flag("--json", p.json, "print JSON instead of text");
  p.cmd->add_option("--device", p.device, "auto (CUDA when a GPU is visible), cpu or cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  p.cmd->add_option("--threads", p.threads, "CPU backend threads (0: all)")
      ->check(whole(0, limits::kMaxThreads))
      ->capture_default_str();
}

int run_predict_command(const PredictCommand& c) {
  RT_CHECK_AS(ConfigError, World::get().size() == 1,
              "predict: runs in one process (every rank would print the same): start it without "
              "mpirun");
  const std::unique_ptr<Backend> backend =
      make_inference_backend(c.device, c.threads, World::get());
  LoadedModel loaded = load_model(c.checkpoint, *backend, backend->compute_dtype());
  const std::vector<Prediction> predictions = predict_images(loaded, *backend, c.images, c.top);
  const std::vector<std::string>& names = loaded.meta.class_names;
  const std::string out =
      c.json ? json_text(predictions_json(c.checkpoint, predictions, names), 2) + "\n"
             : format_text(predictions, names);
  std::fputs(out.c_str(), stdout);
  int failed = 0;
  for (const Prediction& p : predictions)
    if (!p.error.empty()) {
      std::fprintf(stderr, "ringtrain: error: %s\n", p.error.c_str());
      ++failed;
    }
  if (failed > 0)
    std::fprintf(stderr, "ringtrain: error: predict: %d of %zu image(s) could not be read\n",
                 failed, predictions.size());
  return failed > 0 ? exit_code::kError : exit_code::kOk;
}

}  // namespace ringtrain::cli
