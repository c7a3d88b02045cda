#pragma once
#include <string>

#include "ringtrain/backend/backend.hpp"
#include "ringtrain/distributed/communicator.hpp"
#include "ringtrain/nn/parameters.hpp"

namespace ringtrain {

// Batch norm over N,H,W with PyTorch's defaults (momentum 0.1, eps 1e-5), optionally fused
// with the ReLU that follows it. The batch mean and 1/std of the last training forward are kept
// for backward.
class BatchNorm2d {
 public:
  BatchNorm2d(ParameterSet& params, const std::string& name, int channels, bool relu);

  // weight 1 (or 0 for a zero-initialised residual branch), bias 0, running stats 0 and 1.
  void init(Device& device, bool zero_weight) const;

  void forward(Backend& backend, const Tensor& x, Tensor& y, bool training);
  // The forward's affine map of x, not applied: [scale (C), shift (C)], for an op that applies
  // it where the output is used (Ops::batch_norm_add_relu). Training keeps and updates the
  // statistics as forward does. Not with SyncBatchNorm (fuses_forward() is false).
  const Tensor& forward_affine(Backend& backend, const Tensor& x, bool training);
  bool fuses_forward() const { return sync_ == nullptr && !relu_; }
  void backward(Backend& backend, const Tensor& x, const Tensor& dy, Tensor& dx);
  // SyncBatchNorm: batch statistics and their gradients all-reduced over the communicator's
  // ranks (nullptr: this rank's batch alone).
  void set_sync(Communicator* comm) { sync_ = comm; }

  static constexpr float kMomentum = 0.1f;
  static constexpr float kEps = 1e-5f;

 private:
  ParameterSet* params_;
  int channels_;
  bool relu_;
  int weight_, bias_, running_mean_, running_var_;
  Communicator* sync_ = nullptr;
  Tensor save_mean_, save_invstd_;
  Tensor affine_;  // forward_affine's result
  void allocate_statistics(Device& device);
  Tensor sums_, grad_sums_, global_grad_sums_;  // f64 per-channel sums (SyncBatchNorm phases)
  double count_ = 0;                            // values per channel in the (global) batch
};

}  // namespace ringtrain
