#pragma once
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "ringtrain/core/names.hpp"
#include "ringtrain/nn/linear.hpp"
#include "ringtrain/nn/residual_block.hpp"

namespace ringtrain {

// cifar: a 3x3 convolution of stride 1; imagenet: 7x7 of stride 2 and a 3x3 max pool.
enum class Stem { cifar, imagenet };
template <>
const NameTable<Stem>& names_of<Stem>();

struct ResNetConfig {
  int depth = 50;  // 18, 34, 50, 101, 152
  Stem stem = Stem::cifar;
  double width = 1.0;  // multiplies every stage's channel count
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

// A ResNet run forward, then backward in reverse. It owns its parameters (one flat buffer),
// its activations and a workspace for the gradients between the layers, sized on the first
// forward of each input shape.
class ResNet {
 public:
  ResNet(const ResNetConfig& config, Backend& backend, DType dtype, uint64_t seed);
  ResNet(const ResNet&) = delete;
  ResNet& operator=(const ResNet&) = delete;

  const ResNetConfig& config() const { return config_; }
  Backend& backend() { return backend_; }
  ParameterSet& parameters() { return params_; }
  int64_t parameter_count() const { return params_.param_count(); }
  // Convolution and linear multiply-accumulates of one forward pass of an h x w image.
  int64_t macs_per_image(int h, int w) const;

  // images [N,C,H,W] -> logits [N,classes]. The images must stay alive until backward.
  const Tensor& forward(const Tensor& images, bool training);
  // Adds every parameter's gradient, from the gradient of the loss at the logits, to the
  // parameter gradients.
  void backward(const Tensor& dlogits);
  // Where a loss writes its gradient at the logits: [N,classes] of the last forward.
  Tensor& logits_grad() { return d_logits_; }
  // SyncBatchNorm in every batch norm (nullptr: per-rank statistics).
  void set_sync_batch_norm(Communicator* comm);
  // The bytes of the buffer that the gradients between the layers share (nn/workspace.hpp).
  std::size_t workspace_bytes() const { return workspace_.bytes(); }

 private:
  void allocate(const Shape& input);

  ResNetConfig config_;
  Backend& backend_;
  ParameterSet params_;
  ConvBn stem_;
  std::optional<PoolGeometry> stem_pool_;
  std::vector<ResidualBlock> blocks_;
  std::optional<Linear> fc_;
  Tensor stem_out_;
  Tensor pooled_;                 // stem max-pool output (imagenet stem)
  Tensor features_, d_features_;  // global average pool output [N,C]
  Tensor logits_, d_logits_;
  Tensor input_;
  Workspace workspace_;
};

}  // namespace ringtrain
