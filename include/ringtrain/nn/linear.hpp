#pragma once
#include <random>
#include <string>

#include "ringtrain/backend/backend.hpp"
#include "ringtrain/nn/parameters.hpp"

namespace ringtrain {

// y[N,out] = x[N,in] W^T + b.
class Linear {
 public:
  Linear(ParameterSet& params, const std::string& name, int in_features, int out_features);

  // PyTorch's nn.Linear default: weight and bias uniform in +-1/sqrt(in_features).
  void init(Device& device, std::mt19937_64& rng) const;
  int64_t macs_per_image() const { return int64_t{in_} * out_; }

  void forward(Backend& backend, const Tensor& x, Tensor& y) const;
  void backward(Backend& backend, const Tensor& x, const Tensor& dy, Tensor* dx) const;

 private:
  ParameterSet* params_;
  int in_, out_;
  int weight_, bias_;
};

}  // namespace ringtrain
