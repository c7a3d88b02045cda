#include "ringtrain/evaluation/evaluation.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "ringtrain/loader/device_prefetcher.hpp"
#include "ringtrain/loader/loader.hpp"
#include "ringtrain/loader/sampler.hpp"

namespace ringtrain {

std::vector<double> Evaluation::per_class_accuracy() const {
  std::vector<double> accuracy(static_cast<size_t>(classes));
  for (int c = 0; c < classes; ++c) {
    const auto row = confusion.begin() + static_cast<ptrdiff_t>(c) * classes;
    const double images = std::accumulate(row, row + classes, 0.0);
    accuracy[static_cast<size_t>(c)] = images > 0 ? confusion_at(c, c) / images : std::nan("");
  }
  return accuracy;
}

Evaluation make_evaluation(int classes) {
  RT_CHECK(classes > 0, "evaluation: ", classes, " classes");
  Evaluation e;
  e.classes = classes;
  e.top_k = std::min(5, classes);
  e.confusion.assign(static_cast<size_t>(classes) * classes, 0.0);
  return e;
}

std::vector<int> top_k(const float* scores, int n, int k) {
  RT_CHECK(k >= 1 && k <= n, "top_k: k ", k, " outside [1, ", n, "]");
  std::vector<int> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [scores](int a, int b) {
    return scores[a] > scores[b] || (scores[a] == scores[b] && a < b);
  });
  order.resize(static_cast<size_t>(k));
  return order;
}

void add_predictions(Evaluation& e, const float* logits, const int32_t* labels, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const int32_t label = labels[i];
    RT_CHECK(label >= 0 && label < e.classes, "evaluation: label ", label, " of image ", i,
             " outside [0, ", e.classes, ")");
    const std::vector<int> best = top_k(logits + i * e.classes, e.classes, e.top_k);
    e.top1_correct += best[0] == label ? 1 : 0;
    e.topk_correct += std::find(best.begin(), best.end(), label) != best.end() ? 1 : 0;
    e.confusion[static_cast<size_t>(label) * e.classes + best[0]] += 1;
    e.count += 1;
  }
}

void all_reduce(Evaluation& e, Communicator& comm) {
  // Note: counts travel as doubles, exact up to 2^53 images.
  std::vector<double> sums = {e.count, e.loss_sum, e.top1_correct, e.topk_correct};
  sums.insert(sums.end(), e.confusion.begin(), e.confusion.end());
  RT_CHECK(sums.size() <= static_cast<size_t>(INT_MAX), "evaluation: the confusion matrix of ",
           e.classes, " classes is too large to sum over the ranks in one all-reduce");
  comm.all_reduce_host(sums.data(), static_cast<int>(sums.size()), ReduceOp::sum);
  e.count = sums[0];
  e.loss_sum = sums[1];
  e.top1_correct = sums[2];
  e.topk_correct = sums[3];
  std::copy(sums.begin() + 4, sums.end(), e.confusion.begin());
}

int evaluation_batch_size(int requested, int64_t shard) {
  return static_cast<int>(std::min<int64_t>(requested, std::max<int64_t>(shard, 1)));
}

std::string clamped_batch_note(const char* flag, int requested, int used) {
  return str_cat(flag, " ", requested, " is more than the ", used,
                 " images each rank evaluates: batches of ", used);
}

void run_inference(ResNet& model, Backend& backend, const Split& split, const Normalization& norm,
                   const EvalSettings& settings, int ranks, int rank, const LogitsFn& batch) {
  const DistributedSampler sampler = evaluation_sampler(split.count, ranks, rank);
  LoaderConfig lc;
  lc.batch_size = evaluation_batch_size(settings.batch_size, sampler.per_rank());
  if (lc.batch_size < settings.batch_size && settings.flag && rank == 0)
    std::fprintf(stderr, "eval: %s\n",
                 clamped_batch_note(settings.flag, settings.batch_size, lc.batch_size).c_str());
  lc.workers = settings.workers;
  lc.augment = lc.shuffle = lc.drop_last = false;
  const ImageTransform transform(split, norm, lc.pad, backend.compute_dtype(), backend.layout());
  Loader loader(split, transform, sampler, lc, backend);
  DevicePrefetcher batches(loader, backend);
  evaluate_batches(model, batches, batch);
}

void evaluate_batches(ResNet& model, DevicePrefetcher& batches, const LogitsFn& batch) {
  batches.start_epoch(0);
  while (const DeviceBatch* b = batches.next()) batch(model.forward(b->images, false), b->labels);
}

Tensor to_host(Backend& backend, const Tensor& t) {
  if (t.dtype() == DType::f16 || t.dtype() == DType::bf16) {
    Tensor wide = backend.zeros(t.shape(), DType::f32);
    backend.cast(t, wide);
    return to_host(backend, wide);
  }
  Tensor host = Tensor::zeros(t.shape(), t.dtype());
  backend.copy(t, host);
  backend.synchronize();
  return host;
}

void check_data_fits(const CheckpointMeta& meta, const std::string& checkpoint,
                     const std::vector<std::string>& class_names, const Split& split,
                     const std::string& data, const std::string& split_name) {
  const int channels = meta.model_config.in_channels;
  RT_CHECK_AS(ConfigError,
              split.height == meta.image_height && split.width == meta.image_width &&
                  split.channels == channels,
              "eval: the ", split_name, " images of ", data, " are ", split.height, "x",
              split.width, "x", split.channels, ", but ", checkpoint, " was trained on ",
              meta.image_height, "x", meta.image_width, "x", channels,
              " images: evaluate it on data of the shape it was trained on");
  const size_t classes = meta.class_names.size();
  RT_CHECK_AS(ConfigError, class_names.size() == classes, "eval: ", data, " has ",
              class_names.size(), " classes, but ", checkpoint, " was trained on ", classes,
              ": evaluate it on data with the classes it was trained on");
  for (size_t c = 0; c < classes; ++c)
    RT_CHECK_AS(ConfigError, class_names[c] == meta.class_names[c], "eval: class ", c, " of ", data,
                " is '", class_names[c], "', but in ", checkpoint, " it is '", meta.class_names[c],
                "': evaluate it on data with the classes it was trained on",
                " (in the same order)");
}

Evaluation evaluate_split(ResNet& model, Backend& backend, const Split& split,
                          const Normalization& norm, const EvalSettings& settings,
                          Communicator& comm,
                          const std::function<void(int64_t, int64_t)>& progress) {
  Evaluation e = make_evaluation(model.config().classes);
  const int64_t shard = evaluation_sampler(split.count, comm.size(), comm.rank()).per_rank();
  run_inference(model, backend, split, norm, settings, comm.size(), comm.rank(),
                [&](const Tensor& logits, const Tensor& labels) {
                  const int64_t n = logits.dim(0);
                  e.loss_sum +=
                      backend.softmax_cross_entropy(logits, labels, 0.0f, nullptr, 1.0) * n;
                  const Tensor host_logits = to_host(backend, logits);
                  const Tensor host_labels = to_host(backend, labels);
                  add_predictions(e, host_logits.data<float>(), host_labels.data<int32_t>(), n);
                  if (progress) progress(static_cast<int64_t>(e.count), shard);
                });
  all_reduce(e, comm);
  RT_CHECK(e.count == static_cast<double>(split.count), "evaluation: the ranks saw ", e.count,
           " images, expected ", split.count);
  return e;
}

}  // namespace ringtrain
