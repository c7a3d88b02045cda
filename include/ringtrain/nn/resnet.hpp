#pragma once
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "ringtrain/nn/linear.hpp"
#include "ringtrain/nn/residual_block.hpp"

namespace ringtrain {

struct ResNetConfig {
  int depth = 50;              // 18, 34, 50, 101, 152
  std::string stem = "cifar";  // cifar: 3x3 stride 1; imagenet: 7x7 stride 2 + 3x3 max pool
  double width = 1.0;          // multiplies every stage's channel count
  int classes = 10;
  int in_channels = 3;
  bool zero_init_residual = false;
};

// The blocks per stage and the block type of a depth; throws for an unknown depth.
struct ResNetLayout {
  std::vector<int> blocks;
  bool bottleneck;
};
ResNetLayout resnet_layout(int depth);

// A ResNet run forward, then backward in reverse. It owns its parameters (one flat buffer)
// and its activations, which are sized on the first forward of each input shape.
class ResNet {
 public:
  ResNet(const ResNetConfig& config, Backend& backend, DType dtype, uint64_t seed);
  ResNet(const ResNet&) = delete;
  ResNet& operator=(const ResNet&) = delete;

  const ResNetConfig& config() const { return config_; }
  ParameterSet& parameters() { return params_; }
  int64_t parameter_count() const { return params_.param_count(); }
  // Convolution and linear multiply-accumulates of one forward pass of an h x w image.
  int64_t macs_per_image(int h, int w) const;

  // images [N,C,H,W] -> logits [N,classes]. The images must stay alive until backward.
  const Tensor& forward(const Tensor& images, bool training);
  // Writes every parameter gradient from the gradient of the loss at the logits.
  void backward(const Tensor& dlogits);
  // SyncBatchNorm in every batch norm (nullptr: per-rank statistics).
  void set_sync_batch_norm(Communicator* comm);

 private:
  void allocate(const Shape& input);

  ResNetConfig config_;
  Backend& backend_;
  ParameterSet params_;
  ConvBn stem_;
  std::optional<PoolGeometry> stem_pool_;
  std::vector<ResidualBlock> blocks_;
  std::optional<Linear> fc_;
  Tensor pooled_, d_pooled_;      // stem max-pool output (imagenet stem)
  Tensor features_, d_features_;  // global average pool output [N,C]
  Tensor logits_;
  Tensor input_;
};

}  // namespace ringtrain
