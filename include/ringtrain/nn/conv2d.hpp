#pragma once
#include <random>
#include <string>

#include "ringtrain/backend/backend.hpp"
#include "ringtrain/nn/parameters.hpp"

namespace ringtrain {

// Square convolution without bias (batch norm follows every convolution in a ResNet).
class Conv2d {
 public:
  Conv2d(ParameterSet& params, const std::string& name, int in_channels, int out_channels,
         int kernel, int stride, int pad);

  ConvGeometry geometry(const Shape& x) const;
  Shape output_shape(const Shape& x) const;
  int64_t macs_per_image(const Shape& x) const;

  // Kaiming normal, fan_out, gain sqrt(2) (torchvision's ResNet initialisation).
  void init(Device& device, std::mt19937_64& rng) const;

  void forward(Backend& backend, const Tensor& x, Tensor& y) const;
  // Writes the weight gradient; the input gradient only when dx is given.
  void backward(Backend& backend, const Tensor& x, const Tensor& dy, Tensor* dx) const;

 private:
  ParameterSet* params_;
  int in_, out_, kernel_, stride_, pad_;
  int weight_;
};

}  // namespace ringtrain
