#pragma once
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ringtrain/nn/batch_norm.hpp"
#include "ringtrain/nn/conv2d.hpp"
#include "ringtrain/nn/workspace.hpp"

namespace ringtrain {

// conv -> batch norm -> optional ReLU: the unit every ResNet is made of. It keeps the
// convolution's output, which batch norm's backward reads, sized for the last input shape it
// was allocated for; its output and the gradients belong to its caller.
class ConvBn {
 public:
  ConvBn(ParameterSet& params, const std::string& name, int in_channels, int out_channels,
         int kernel, int stride, bool relu);

  void init(Device& device, std::mt19937_64& rng, bool zero_norm_weight) const;
  Shape output_shape(const Shape& x) const { return conv_.output_shape(x); }
  int64_t macs_per_image(const Shape& x) const { return conv_.macs_per_image(x); }
  void allocate(Device& device, const Shape& x);

  // Writes batch norm's output, after the ReLU where the unit has one, into y.
  void forward(Backend& backend, const Tensor& x, Tensor& y, bool training);
  // The forward of a unit whose output a residual block's end consumes: the convolution into
  // conv_out(), and batch norm's affine map of it, not applied (BatchNorm2d::forward_affine).
  const Tensor& forward_affine(Backend& backend, const Tensor& x, bool training);
  const Tensor& conv_out() const { return conv_out_; }
  bool fuses_forward() const { return bn_.fuses_forward(); }
  // dy is the gradient at the output and d_conv a buffer of the output's shape, for the
  // gradient at the convolution's output. Writes the parameter gradients, and the input
  // gradient into dx when given.
  void backward(Backend& backend, const Tensor& x, const Tensor& dy, Tensor& d_conv, Tensor* dx);

  void set_sync_batch_norm(Communicator* comm) { bn_.set_sync(comm); }

 private:
  Conv2d conv_;
  BatchNorm2d bn_;
  Tensor conv_out_;
};

// A basic block (two 3x3 convolutions) or a bottleneck (1x1, 3x3 with the stride as in v1.5,
// 1x1 expanding by 4), with a 1x1 conv + BN projection where the shape changes, ending in
// relu(main + shortcut).
class ResidualBlock {
 public:
  ResidualBlock(ParameterSet& params, const std::string& name, int in_channels, int planes,
                int stride, bool bottleneck);

  int out_channels() const { return out_channels_; }
  void init(Device& device, std::mt19937_64& rng, bool zero_init_residual) const;
  Shape output_shape(const Shape& x) const;
  int64_t macs_per_image(const Shape& x) const;
  // Sizes the activations for input x; returns the most elements any of the block's workspace
  // slots holds for it.
  int64_t allocate(Device& device, const Shape& x);

  void forward(Backend& backend, const Tensor& x, bool training, const Workspace& ws);
  // dy is the gradient at the output (overwritten). Writes the parameter gradients, and the
  // input gradient into dx when given.
  void backward(Backend& backend, const Tensor& x, Tensor& dy, Tensor* dx, const Workspace& ws);
  void set_sync_batch_norm(Communicator* comm);

  const Tensor& out() const { return out_; }

 private:
  // Whether the block ends in one pass (forward_tail): not with SyncBatchNorm.
  bool fuses_tail() const;
  void forward_tail(Backend& backend, const Tensor& in, const Tensor& x, bool training);
  int out_channels_;
  std::vector<ConvBn> main_;
  std::unique_ptr<ConvBn> shortcut_;
  std::vector<Tensor> unit_out_;  // the outputs of main_'s ReLU units: the next unit's input
  Tensor out_;
};

}  // namespace ringtrain
