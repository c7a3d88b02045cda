// `ringtrain eval`'s arithmetic (top-k with its tie rule, the confusion matrix, per-class
// accuracy, the reduction over ranks) against hand-computed values, and evaluate_split against
// a direct forward of the whole split.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "eval_reference.hpp"
#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/data/synthetic.hpp"
#include "ringtrain/evaluation/evaluation.hpp"

namespace ringtrain {
namespace {

// A communicator of `size` ranks that all hold what this one holds: a sum is `size` times it.
class MirrorCommunicator final : public Communicator {
 public:
  explicit MirrorCommunicator(int size) : size_(size) {}
  int rank() const override { return 0; }
  int size() const override { return size_; }
  std::string name() const override { return "mirror"; }
  CommHandle all_reduce_async(Tensor&, int64_t, int64_t, ReduceOp) override { return 0; }
  void wait(CommHandle) override {}
  void progress() override {}
  void broadcast(Tensor&, int) override {}
  void barrier() override {}
  void all_reduce_host(double* values, int count, ReduceOp op) override {
    if (op == ReduceOp::sum)
      for (int i = 0; i < count; ++i) values[i] *= size_;
  }

 private:
  int size_;
};

TEST(Evaluation, TopKTakesEqualScoresLowestIndexFirst) {
  const float scores[] = {1, 3, 3, 2, 3};
  EXPECT_EQ(top_k(scores, 5, 1), std::vector<int>({1}));
  EXPECT_EQ(top_k(scores, 5, 3), std::vector<int>({1, 2, 4}));
  EXPECT_EQ(top_k(scores, 5, 5), std::vector<int>({1, 2, 4, 3, 0}));
  EXPECT_THROW(top_k(scores, 5, 0), Error);
  EXPECT_THROW(top_k(scores, 5, 6), Error);
}

// Five images of six classes (top-5), worked out by hand:
//   A [0 1 2 3 4 5] label 5: top-1 5 (right), top-5 {5 4 3 2 1} (right)
//   B [5 4 3 2 1 0] label 5: top-1 0, top-5 {0 1 2 3 4} (both wrong)
//   C all equal     label 0: top-1 0 (right: lowest index), top-5 {0 1 2 3 4} (right)
//   D all equal     label 5: top-1 0, top-5 {0 1 2 3 4} (both wrong: 5 is the last of the tie)
//   E [0 2 2 0 0 0] label 2: top-1 1 (wrong: the tie goes to 1), top-5 holds 2 (right)
Evaluation hand_example() {
  const std::vector<float> logits = {0, 1, 2, 3, 4, 5, 5, 4, 3, 2, 1, 0, 1, 1, 1,
                                     1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 2, 2, 0, 0, 0};
  const std::vector<int32_t> labels = {5, 5, 0, 5, 2};
  Evaluation e = make_evaluation(6);
  add_predictions(e, logits.data(), labels.data(), 5);
  return e;
}

TEST(Evaluation, TopOneTopFiveConfusionAndPerClassByHand) {
  const Evaluation e = hand_example();
  EXPECT_EQ(e.top_k, 5);
  EXPECT_EQ(e.count, 5);
  EXPECT_DOUBLE_EQ(e.top1_accuracy(), 2.0 / 5);
  EXPECT_DOUBLE_EQ(e.topk_accuracy(), 3.0 / 5);
  std::vector<double> confusion(36, 0.0);
  confusion[5 * 6 + 5] = 1;  // A
  confusion[5 * 6 + 0] = 2;  // B, D
  confusion[0 * 6 + 0] = 1;  // C
  confusion[2 * 6 + 1] = 1;  // E
  EXPECT_EQ(e.confusion, confusion);
  const std::vector<double> per_class = e.per_class_accuracy();
  EXPECT_DOUBLE_EQ(per_class[0], 1.0);
  EXPECT_DOUBLE_EQ(per_class[2], 0.0);
  EXPECT_DOUBLE_EQ(per_class[5], 1.0 / 3);
  for (int empty : {1, 3, 4}) EXPECT_TRUE(std::isnan(per_class[size_t(empty)])) << empty;
}

// A batch beyond the images a rank evaluates only takes memory (the loader sizes its buffers by
// the batch): it is clamped to them.
TEST(Evaluation, BatchIsClampedToTheImagesOfTheShard) {
  EXPECT_EQ(evaluation_batch_size(65536, 256), 256);
  EXPECT_EQ(evaluation_batch_size(32, 256), 32);
  EXPECT_EQ(evaluation_batch_size(256, 256), 256);
  EXPECT_EQ(evaluation_batch_size(8, 0), 1);
  EXPECT_EQ(clamped_batch_note("--eval-batch-size", 65536, 128),
            "--eval-batch-size 65536 is more than the 128 images each rank evaluates: batches of "
            "128");
}

TEST(Evaluation, TopKIsAtMostTheClassCount) {
  EXPECT_EQ(make_evaluation(3).top_k, 3);
  EXPECT_EQ(make_evaluation(5).top_k, 5);
  EXPECT_EQ(make_evaluation(1000).top_k, 5);
  Evaluation two = make_evaluation(2);
  const float logits[] = {0, 1};
  const int32_t label = 0;
  add_predictions(two, logits, &label, 1);
  EXPECT_EQ(two.top1_correct, 0);
  EXPECT_EQ(two.topk_correct, 1);  // top-2 of 2 classes holds every label
}

TEST(Evaluation, ALabelOutsideTheClassesIsRefusedByName) {
  Evaluation e = make_evaluation(3);
  const float logits[] = {0, 1, 2};
  const int32_t label = 3;
  try {
    add_predictions(e, logits, &label, 1);
    FAIL() << "label 3 of 3 classes was accepted";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("label 3 of image 0 outside [0, 3)"), std::string::npos)
        << err.what();
  }
}

TEST(Evaluation, AllReduceSumsEveryCountAndTheConfusionMatrix) {
  Evaluation e = hand_example();
  e.loss_sum = 1.5;
  MirrorCommunicator three(3);
  all_reduce(e, three);
  const Evaluation once = hand_example();
  EXPECT_EQ(e.count, 3 * once.count);
  EXPECT_EQ(e.loss_sum, 4.5);
  EXPECT_EQ(e.top1_correct, 3 * once.top1_correct);
  EXPECT_EQ(e.topk_correct, 3 * once.topk_correct);
  for (size_t i = 0; i < e.confusion.size(); ++i)
    EXPECT_EQ(e.confusion[i], 3 * once.confusion[i]) << i;
  EXPECT_DOUBLE_EQ(e.top1_accuracy(), once.top1_accuracy());
}

// The loader's batches (partial last one included) give what one forward of the whole split
// gives, the loss as the mean cross-entropy computed here in double.
TEST(Evaluation, EvaluateSplitMatchesADirectForwardOfTheWholeSplit) {
  SynthConfig sc;
  sc.train_count = 16;
  sc.test_count = 11;
  sc.height = sc.width = 8;
  sc.classes = 4;
  sc.seed = 3;
  const Dataset d = make_synthetic(sc);
  CpuBackend backend(1);
  ResNetConfig mc;
  mc.depth = 18;
  mc.width = 0.125;
  mc.classes = 4;
  ResNet model(mc, backend, DType::f32, 7);
  const Normalization norm = channel_statistics(d.train);
  std::vector<std::vector<uint8_t>> images;
  for (int64_t i = 0; i < d.test.count; ++i)
    images.emplace_back(d.test.image(i), d.test.image(i) + d.test.image_bytes());
  const std::vector<float> logits = test::reference_logits(model, backend, images, 8, 8, 3, norm);
  Evaluation want = make_evaluation(4);
  add_predictions(want, logits.data(), d.test.labels.data(), d.test.count);
  double loss = 0;
  for (int64_t i = 0; i < d.test.count; ++i)
    loss += test::cross_entropy(&logits[size_t(i) * 4], 4, d.test.labels[size_t(i)]);
  loss /= static_cast<double>(d.test.count);

  MirrorCommunicator one(1);
  const Evaluation got = evaluate_split(model, backend, d.test, norm, EvalSettings{3, 2}, one);
  EXPECT_EQ(got.count, 11);
  EXPECT_NEAR(got.loss(), loss, 1e-5 * loss);  // f32 logits, batches of 3 against one of 11
  EXPECT_EQ(got.confusion, want.confusion);
  EXPECT_EQ(got.top1_correct, want.top1_correct);
  EXPECT_EQ(got.topk_correct, want.topk_correct);
}

}  // namespace
}  // namespace ringtrain
