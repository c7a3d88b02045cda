#include "ringtrain/nn/resnet.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace ringtrain {

ResNetLayout resnet_layout(int depth) {
  switch (depth) {
    case 18:
      return {{2, 2, 2, 2}, false};
    case 34:
      return {{3, 4, 6, 3}, false};
    case 50:
      return {{3, 4, 6, 3}, true};
    case 101:
      return {{3, 4, 23, 3}, true};
    case 152:
      return {{3, 8, 36, 3}, true};
    default:
      throw Error(str_cat("ResNet: depth ", depth, " is not one of 18, 34, 50, 101, 152"));
  }
}

template <>
const NameTable<Stem>& names_of<Stem>() {
  static const NameTable<Stem> names = {{"cifar", Stem::cifar}, {"imagenet", Stem::imagenet}};
  return names;
}

namespace {

int stem_channels(const ResNetConfig& c) {
  RT_CHECK(c.width > 0, "ResNet: width multiplier must be positive, got ", c.width);
  RT_CHECK(c.classes > 1, "ResNet: need at least 2 classes, got ", c.classes);
  RT_CHECK(c.in_channels > 0, "ResNet: need at least one input channel, got ", c.in_channels);
  return std::max(1, static_cast<int>(std::lround(64 * c.width)));
}

}  // namespace

ResNet::ResNet(const ResNetConfig& config, Backend& backend, DType dtype, uint64_t seed)
    : config_(config),
      backend_(backend),
      stem_(params_, "stem", config.in_channels, stem_channels(config),
            config.stem == Stem::cifar ? 3 : 7, config.stem == Stem::cifar ? 1 : 2, true) {
  if (config.stem == Stem::imagenet) stem_pool_ = PoolGeometry{};
  const ResNetLayout layout = resnet_layout(config.depth);
  int channels = stem_channels(config);
  for (size_t stage = 0; stage < layout.blocks.size(); ++stage) {
    const int planes = std::max(1, static_cast<int>(std::lround(64 * config.width * (1 << stage))));
    for (int b = 0; b < layout.blocks[stage]; ++b) {
      const int stride = (stage > 0 && b == 0) ? 2 : 1;
      blocks_.emplace_back(params_, str_cat("layer", stage + 1, ".", b), channels, planes, stride,
                           layout.bottleneck);
      channels = blocks_.back().out_channels();
    }
  }
  fc_.emplace(params_, "fc", channels, config.classes);

  params_.allocate(backend, dtype);
  std::mt19937_64 rng(seed);
  stem_.init(backend, rng, false);
  for (const ResidualBlock& b : blocks_) b.init(backend, rng, config.zero_init_residual);
  fc_->init(backend, rng);
  params_.refresh_weights(backend);
}

int64_t ResNet::macs_per_image(int h, int w) const {
  Shape s = {1, config_.in_channels, h, w};
  int64_t macs = stem_.macs_per_image(s);
  s = stem_.output_shape(s);
  if (stem_pool_) {
    PoolGeometry g = *stem_pool_;
    g.h = static_cast<int>(s[2]);
    g.w = static_cast<int>(s[3]);
    s = {1, s[1], g.p(), g.q()};
  }
  for (const ResidualBlock& b : blocks_) {
    macs += b.macs_per_image(s);
    s = b.output_shape(s);
  }
  return macs + fc_->macs_per_image();
}

void ResNet::allocate(const Shape& input) {
  RT_CHECK(input.size() == 4 && input[1] == config_.in_channels, "ResNet: expected images [N,",
           config_.in_channels, ",H,W], got ", shape_str(input));
  stem_.allocate(backend_, input);
  Shape s = stem_.output_shape(input);
  if (stem_out_.shape() != s) stem_out_ = backend_.zeros(s, backend_.compute_dtype());
  int64_t largest = shape_numel(s);
  if (stem_pool_) {
    stem_pool_->n = static_cast<int>(s[0]);
    stem_pool_->c = static_cast<int>(s[1]);
    stem_pool_->h = static_cast<int>(s[2]);
    stem_pool_->w = static_cast<int>(s[3]);
    s = {s[0], s[1], stem_pool_->p(), stem_pool_->q()};
    if (pooled_.shape() != s) pooled_ = backend_.zeros(s, backend_.compute_dtype());
  }
  for (ResidualBlock& b : blocks_) {
    largest = std::max(largest, b.allocate(backend_, s));
    s = b.output_shape(s);
  }
  workspace_.reserve(backend_, largest, backend_.compute_dtype());
  const Shape features = {s[0], s[1]};
  if (features_.shape() != features) {
    features_ = backend_.zeros(features, backend_.compute_dtype());
    d_features_ = backend_.zeros(features, backend_.compute_dtype());
    logits_ = backend_.zeros({s[0], config_.classes}, backend_.compute_dtype());
    d_logits_ = backend_.zeros({s[0], config_.classes}, backend_.compute_dtype());
  }
}

const Tensor& ResNet::forward(const Tensor& images, bool training) {
  allocate(images.shape());
  input_ = images;
  stem_.forward(backend_, images, stem_out_, training);
  const Tensor* x = &stem_out_;
  if (stem_pool_) {
    backend_.max_pool_forward(*stem_pool_, *x, pooled_);
    x = &pooled_;
  }
  for (ResidualBlock& b : blocks_) {
    b.forward(backend_, *x, training, workspace_);
    x = &b.out();
  }
  backend_.global_avg_pool_forward(*x, features_);
  fc_->forward(backend_, features_, logits_);
  return logits_;
}

void ResNet::set_sync_batch_norm(Communicator* comm) {
  stem_.set_sync_batch_norm(comm);
  for (ResidualBlock& b : blocks_) b.set_sync_batch_norm(comm);
}

// The gradient at a block's output and the one at its input alternate between two workspace
// slots: what one block writes as its input gradient, the block below reads as its output's.
void ResNet::backward(const Tensor& dlogits) {
  RT_CHECK(input_.defined(), "ResNet::backward: no forward before backward");
  Workspace::Slot dy_slot = Workspace::grad_a, dx_slot = Workspace::grad_b;
  fc_->backward(backend_, features_, dlogits, &d_features_);
  Tensor dy = workspace_.at(dy_slot, blocks_.back().out().shape());
  backend_.global_avg_pool_backward(d_features_, dy);
  for (size_t i = blocks_.size(); i-- > 0;) {
    const Tensor& x = i > 0 ? blocks_[i - 1].out() : (stem_pool_ ? pooled_ : stem_out_);
    Tensor dx = workspace_.at(dx_slot, x.shape());
    blocks_[i].backward(backend_, x, dy, &dx, workspace_);
    dy = dx;
    std::swap(dy_slot, dx_slot);
  }
  if (stem_pool_) {
    Tensor d_stem = workspace_.at(dx_slot, stem_out_.shape());
    backend_.max_pool_backward(*stem_pool_, stem_out_, pooled_, dy, d_stem);
    dy = d_stem;
  }
  Tensor d_conv = workspace_.at(Workspace::scratch, stem_out_.shape());
  stem_.backward(backend_, input_, dy, d_conv, nullptr);
}

}  // namespace ringtrain
