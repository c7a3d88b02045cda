#pragma once
// The reference DataParallel is checked against: one model, on one backend, runs the batch's
// chunks one after another (each with its batch-norm statistics, as each replica has), adding
// each chunk's share of the batch-mean loss gradient to its gradients.
#include "ringtrain/nn/forward_backward.hpp"
#include "ringtrain/parallel/data_parallel.hpp"
#include "test_util.hpp"

namespace ringtrain::test {

inline BatchResult chunks_in_turn(ResNet& model, const Tensor& images, const Tensor& labels,
                                  int devices) {
  const int64_t chunk = images.dim(0) / devices;
  const Shape shape = {chunk, images.dim(1), images.dim(2), images.dim(3)};
  const LossSettings share{0.0f, 1.0 / devices};
  BatchResult total;
  for (int d = 0; d < devices; ++d) {
    const Tensor x = images.reshaped({images.numel()})
                         .slice(d * shape_numel(shape), shape)
                         .with_layout(images.layout());
    const BatchResult r = forward_backward(model, x, labels.slice(d * chunk, {chunk}), share);
    total.loss += r.loss / devices;
    total.correct += r.correct;
  }
  return total;
}

}  // namespace ringtrain::test
