#include "eval_command.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "ringtrain/core/exit_codes.hpp"
#include "ringtrain/core/json_text.hpp"
#include "ringtrain/core/output_file.hpp"
#include "ringtrain/data/hdf5_io.hpp"
#include "ringtrain/distributed/mpi_communicator.hpp"
#include "ringtrain/evaluation/evaluation.hpp"
#include "ringtrain/evaluation/inference.hpp"
#include "ringtrain/run_config/config.hpp"

namespace ringtrain::cli {
namespace {

// The widest of the class names, for the tables.
size_t name_width(const std::vector<std::string>& names) {
  size_t w = 5;
  for (const std::string& n : names) w = std::max(w, n.size());
  return w;
}

std::string format_report(const EvalCommand& c, const Evaluation& e,
                          const std::vector<std::string>& names) {
  const int w = static_cast<int>(name_width(names));
  std::string s = fmt::format("checkpoint {}\ndata {}, split {}, {} images\n", c.checkpoint, c.data,
                              c.split, e.count);
  s += fmt::format("loss {:.4f}  top-1 {:.2f}%  top-{} {:.2f}%\n", e.loss(),
                   100 * e.top1_accuracy(), e.top_k, 100 * e.topk_accuracy());
  s += "per-class accuracy:\n";
  const std::vector<double> accuracy = e.per_class_accuracy();
  for (int t = 0; t < e.classes; ++t)
    s += fmt::format("  {:<{}}  {:>7}\n", names[size_t(t)], w,
                     std::isnan(accuracy[size_t(t)])
                         ? std::string("-")
                         : fmt::format("{:.2f}%", 100 * accuracy[size_t(t)]));
  s += "confusion matrix (rows: true class, columns: predicted class):\n";
  s += fmt::format("  {:<{}}", "", w);
  for (int p = 0; p < e.classes; ++p) s += fmt::format(" {:>{}}", names[size_t(p)], w);
  s += "\n";
  for (int t = 0; t < e.classes; ++t) {
    s += fmt::format("  {:<{}}", names[size_t(t)], w);
    for (int p = 0; p < e.classes; ++p) s += fmt::format(" {:>{}}", e.confusion_at(t, p), w);
    s += "\n";
  }
  return s;
}

nlohmann::json report_json(const EvalCommand& c, const Evaluation& e,
                           const std::vector<std::string>& names) {
  nlohmann::json per_class = nlohmann::json::array(), confusion = nlohmann::json::array();
  for (double a : e.per_class_accuracy())
    per_class.push_back(std::isnan(a) ? nlohmann::json() : nlohmann::json(a));
  for (int t = 0; t < e.classes; ++t) {
    nlohmann::json row = nlohmann::json::array();
    for (int p = 0; p < e.classes; ++p) row.push_back(static_cast<int64_t>(e.confusion_at(t, p)));
    confusion.push_back(row);
  }
  return {{"checkpoint", c.checkpoint},
          {"data", c.data},
          {"split", c.split},
          {"count", static_cast<int64_t>(e.count)},
          {"class_names", names},
          {"loss", e.loss()},
          {"top1_accuracy", e.top1_accuracy()},
          {"top_k", e.top_k},
          {"topk_accuracy", e.topk_accuracy()},
          {"per_class_accuracy", per_class},
          {"confusion", confusion}};
}

// Rank 0's progress on stderr, every 5 seconds.
std::function<void(int64_t, int64_t)> progress_printer(bool root) {
  const auto start = std::chrono::steady_clock::now();
  auto last = start;
  return [root, start, last](int64_t done, int64_t total) mutable {
    const auto now = std::chrono::steady_clock::now();
    if (!root || std::chrono::duration<double>(now - last).count() < 5) return;
    last = now;
    fmt::print(stderr, "eval: {}/{} images of this rank ({}%), {:.1f} s\n", done, total,
               100 * done / total, std::chrono::duration<double>(now - start).count());
  };
}

void evaluate(const EvalCommand& c, World& world) {
  const auto start = std::chrono::steady_clock::now();
  check_outputs_apart({{"--out", c.out}}, {{"--checkpoint", c.checkpoint}, {"--data", c.data}},
                      "eval: ");
  const std::unique_ptr<Backend> backend = make_inference_backend(c.device, c.threads, world);
  LoadedModel loaded = load_model(c.checkpoint, *backend, backend->compute_dtype());
  // The train images stay on disk unless they are evaluated.
  const Dataset data = read_hdf5_dataset(c.data, c.split == "train" ? INT64_MAX : 0);
  const Split& split = c.split == "train" ? data.train : data.test;
  check_data_fits(loaded.meta, c.checkpoint, data.class_names, split, c.data, c.split);
  MpiCommunicator comm(world.comm());
  const Evaluation e = evaluate_split(*loaded.model, *backend, split, loaded.meta.norm,
                                      EvalSettings{c.batch_size, c.workers}, comm,
                                      progress_printer(world.is_root()));
  if (!world.is_root()) return;
  std::fputs(format_report(c, e, loaded.meta.class_names).c_str(), stdout);
  if (!c.out.empty())
    write_text_file(c.out, json_text(report_json(c, e, loaded.meta.class_names), 2) + "\n",
                    "eval --out");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print(stderr, "eval: {} images on {} rank(s) in {:.2f} s\n", e.count, world.size(), seconds);
}

}  // namespace

void add_eval_command(CLI::App& app, EvalCommand& e) {
  e.cmd = app.add_subcommand(
      "eval",
      "measure a checkpoint's model on a labelled dataset: loss, top-1 and top-5 accuracy, "
      "per-class accuracy and the confusion matrix (under mpirun each rank takes a share)");
  e.cmd->add_option("--checkpoint", e.checkpoint, "checkpoint file")->required()->check(kFilePath);
  e.cmd->add_option("--data", e.data, "HDF5 dataset")->required()->check(kFilePath);
  e.cmd->add_option("--split", e.split, "split to evaluate")
      ->check(CLI::IsMember({"test", "train"}))
      ->capture_default_str();
  e.cmd->add_option("--batch-size", e.batch_size, "images per batch")
      ->check(whole(1, limits::kMaxBatch))
      ->capture_default_str();
  e.cmd->add_option("--out", e.out, "also write the results as JSON to this file")
      ->check(CLI::Validator(
          [](std::string& v) { return v.empty() ? std::string("an empty path: give a file") : ""; },
          "FILE"));
  e.cmd->add_option("--device", e.device, "auto (CUDA when a GPU is visible), cpu or cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  e.cmd->add_option("--threads", e.threads, "CPU backend threads (0: all)")
      ->check(whole(0, limits::kMaxThreads))
      ->capture_default_str();
  e.cmd->add_option("--workers", e.workers, "loader threads (0: assemble batches synchronously)")
      ->check(whole(0, limits::kMaxWorkers))
      ->capture_default_str();
}

int run_eval_command(const EvalCommand& c) {
  World& world = World::get();
  if (!world.is_root()) spdlog::set_level(spdlog::level::warn);
  try {
    evaluate(c, world);
    return exit_code::kOk;
  } catch (const ConfigError&) {
    throw;  // every rank found it before evaluating: they all leave with it
  } catch (const std::exception& e) {
    if (world.size() > 1) world.abort(e.what(), exit_status(e));
    throw;
  }
}

}  // namespace ringtrain::cli
