#pragma once
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ringtrain/nn/batch_norm.hpp"
#include "ringtrain/nn/conv2d.hpp"

namespace ringtrain {

// conv -> batch norm -> optional ReLU: the unit every ResNet is made of. It keeps its own
// activations and their gradients, sized for the last input shape it was allocated for.
class ConvBn {
 public:
  ConvBn(ParameterSet& params, const std::string& name, int in_channels, int out_channels,
         int kernel, int stride, bool relu);

  void init(Device& device, std::mt19937_64& rng, bool zero_norm_weight) const;
  Shape output_shape(const Shape& x) const { return conv_.output_shape(x); }
  int64_t macs_per_image(const Shape& x) const { return conv_.macs_per_image(x); }
  void allocate(Device& device, const Shape& x);

  void forward(Backend& backend, const Tensor& x, bool training);
  // dy is the gradient at the output. Writes the parameter gradients, and the input gradient
  // into dx when given.
  void backward(Backend& backend, const Tensor& x, Tensor& dy, Tensor* dx);

  void set_sync_batch_norm(Communicator* comm) { bn_.set_sync(comm); }
  Tensor& out() { return out_; }
  // Where the next unit writes the gradient at this unit's output.
  Tensor& d_out() { return d_out_; }

 private:
  Conv2d conv_;
  BatchNorm2d bn_;
  bool relu_;
  Tensor conv_out_, out_, d_conv_out_, d_out_;
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
  void allocate(Device& device, const Shape& x);

  void forward(Backend& backend, const Tensor& x, bool training);
  // Reads the gradient at the output from d_out(); writes the input gradient into dx.
  void backward(Backend& backend, const Tensor& x, Tensor* dx);
  void set_sync_batch_norm(Communicator* comm);

  Tensor& out() { return out_; }
  Tensor& d_out() { return d_out_; }

 private:
  int out_channels_;
  std::vector<ConvBn> main_;
  std::unique_ptr<ConvBn> shortcut_;
  Tensor out_, d_out_, d_main_in_;
};

}  // namespace ringtrain
