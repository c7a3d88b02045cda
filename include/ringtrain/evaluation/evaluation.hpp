#pragma once
// A trained model measured on a labelled split: the mean cross-entropy, top-1 and top-k
// accuracy, per-class accuracy and the confusion matrix (`ringtrain eval`).
#include <cstdint>
#include <functional>
#include <vector>

#include "ringtrain/backend/backend.hpp"
#include "ringtrain/checkpoint/checkpoint.hpp"
#include "ringtrain/data/dataset.hpp"
#include "ringtrain/distributed/communicator.hpp"
#include "ringtrain/loader/augment.hpp"
#include "ringtrain/loader/device_prefetcher.hpp"
#include "ringtrain/nn/resnet.hpp"

namespace ringtrain {

// Sums over the images seen, which add over batches and over ranks, and what follows from them.
struct Evaluation {
  int classes = 0;
  int top_k = 1;        // min(5, classes)
  double count = 0;     // images
  double loss_sum = 0;  // cross-entropy (no label smoothing) summed over the images
  double top1_correct = 0, topk_correct = 0;
  // classes x classes, row-major: [true class][predicted (top-1) class] image counts.
  std::vector<double> confusion;

  double loss() const { return loss_sum / count; }
  double top1_accuracy() const { return top1_correct / count; }
  double topk_accuracy() const { return topk_correct / count; }
  double confusion_at(int truth, int predicted) const {
    return confusion[static_cast<size_t>(truth) * classes + predicted];
  }
  // Each class's top-1 accuracy over its own images (the confusion diagonal over the row
  // sum); NaN for a class with no images.
  std::vector<double> per_class_accuracy() const;
};

// An empty evaluation of `classes` classes, top_k = min(5, classes).
Evaluation make_evaluation(int classes);

// The indices of the k largest of scores[0..n), largest first. Note: equal scores are taken
// lowest index first (a stable order), as torch.topk does on the CPU and as count_correct's
// first maximum does, so top-1 here is training's test accuracy's prediction.
std::vector<int> top_k(const float* scores, int n, int k);

// Adds n images' logits (f32 [n, classes] row-major on the host) and labels: top-1, top-k and
// the confusion matrix (the loss is added by the caller). Throws naming a label outside
// [0, classes).
void add_predictions(Evaluation& e, const float* logits, const int32_t* labels, int64_t n);

// Sums every rank's evaluation into every rank's, in one all-reduce.
void all_reduce(Evaluation& e, Communicator& comm);

struct EvalSettings {
  int batch_size = 256;
  int workers = 2;  // loader threads
  // The flag batch_size came from: rank 0 says on stderr when the batch is clamped
  // (evaluation_batch_size); nullptr says nothing.
  const char* flag = "--batch-size";
};

// The images per evaluation batch: `requested`, but no more than the `shard` images this rank
// evaluates (at least 1), since a larger batch only takes memory (the loader's buffers are sized
// by the batch).
int evaluation_batch_size(int requested, int64_t shard);
// "FLAG REQUESTED is more than the USED images each rank evaluates: batches of USED"
std::string clamped_batch_note(const char* flag, int requested, int used);

// `model` in inference mode over this rank's shard of `split` (evaluation_sampler: in order,
// each image on one of `ranks`), images normalised with `norm` (the checkpoint's) by the
// loader's ImageTransform as training's evaluation does. batch(logits, labels) is called for each
// batch with the device's tensors, valid during the call.
using LogitsFn = std::function<void(const Tensor& logits, const Tensor& labels)>;
// The evaluation loop, of `ringtrain eval` and of training's test after each epoch: `model` in
// inference mode over every batch `batches` gives from the start of an epoch.
void evaluate_batches(ResNet& model, DevicePrefetcher& batches, const LogitsFn& batch);
void run_inference(ResNet& model, Backend& backend, const Split& split, const Normalization& norm,
                   const EvalSettings& settings, int ranks, int rank, const LogitsFn& batch);

// A device tensor copied to a new host tensor; floating-point ones widened to f32.
Tensor to_host(Backend& backend, const Tensor& t);

// Throws a ConfigError when the split `split_name` of the dataset `data` is not what the
// checkpoint's model was trained on: another image size or channel count, another number of
// classes or other class names (naming the first that differs).
void check_data_fits(const CheckpointMeta& meta, const std::string& checkpoint,
                     const std::vector<std::string>& class_names, const Split& split,
                     const std::string& data, const std::string& split_name);

// run_inference over every rank's shard: the loss from the backend's softmax_cross_entropy,
// as training's evaluation computes it, and the predictions, reduced over `comm`, so every rank
// returns the whole split's evaluation. progress(images, total) is called after each batch
// with this rank's count so far and its shard's size.
Evaluation evaluate_split(ResNet& model, Backend& backend, const Split& split,
                          const Normalization& norm, const EvalSettings& settings,
                          Communicator& comm,
                          const std::function<void(int64_t, int64_t)>& progress = {});

}  // namespace ringtrain
