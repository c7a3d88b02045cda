#include "ringtrain/nn/residual_block.hpp"

namespace ringtrain {

ConvBn::ConvBn(ParameterSet& params, const std::string& name, int in_channels, int out_channels,
               int kernel, int stride, bool relu)
    : conv_(params, name + ".conv", in_channels, out_channels, kernel, stride, kernel / 2),
      bn_(params, name + ".bn", out_channels, relu),
      relu_(relu) {}

void ConvBn::init(Device& device, std::mt19937_64& rng, bool zero_norm_weight) const {
  conv_.init(device, rng);
  bn_.init(device, zero_norm_weight);
}

void ConvBn::allocate(Device& device, const Shape& x) {
  const Shape y = output_shape(x);
  if (out_.defined() && out_.shape() == y) return;
  const DType t = device.compute_dtype();
  conv_out_ = device.zeros(y, t);
  out_ = device.zeros(y, t);
  d_conv_out_ = device.zeros(y, t);
  // Without a ReLU the unit ends a branch and reads its output gradient from the block.
  if (relu_) d_out_ = device.zeros(y, t);
}

void ConvBn::forward(Backend& backend, const Tensor& x, bool training) {
  conv_.forward(backend, x, conv_out_);
  bn_.forward(backend, conv_out_, out_, training);
}

void ConvBn::backward(Backend& backend, const Tensor& x, Tensor& dy, Tensor* dx) {
  bn_.backward(backend, conv_out_, dy, d_conv_out_);
  conv_.backward(backend, x, d_conv_out_, dx);
}

ResidualBlock::ResidualBlock(ParameterSet& params, const std::string& name, int in_channels,
                             int planes, int stride, bool bottleneck)
    : out_channels_(bottleneck ? planes * 4 : planes) {
  if (bottleneck) {
    main_.emplace_back(params, name + ".1", in_channels, planes, 1, 1, true);
    main_.emplace_back(params, name + ".2", planes, planes, 3, stride, true);
    main_.emplace_back(params, name + ".3", planes, out_channels_, 1, 1, false);
  } else {
    main_.emplace_back(params, name + ".1", in_channels, planes, 3, stride, true);
    main_.emplace_back(params, name + ".2", planes, planes, 3, 1, false);
  }
  if (stride != 1 || in_channels != out_channels_)
    shortcut_ = std::make_unique<ConvBn>(params, name + ".shortcut", in_channels, out_channels_, 1,
                                         stride, false);
}

void ResidualBlock::init(Device& device, std::mt19937_64& rng, bool zero_init_residual) const {
  for (size_t i = 0; i < main_.size(); ++i)
    main_[i].init(device, rng, zero_init_residual && i + 1 == main_.size());
  if (shortcut_) shortcut_->init(device, rng, false);
}

void ResidualBlock::set_sync_batch_norm(Communicator* comm) {
  for (ConvBn& u : main_) u.set_sync_batch_norm(comm);
  if (shortcut_) shortcut_->set_sync_batch_norm(comm);
}

Shape ResidualBlock::output_shape(const Shape& x) const {
  Shape s = x;
  for (const ConvBn& u : main_) s = u.output_shape(s);
  return s;
}

int64_t ResidualBlock::macs_per_image(const Shape& x) const {
  int64_t macs = shortcut_ ? shortcut_->macs_per_image(x) : 0;
  Shape s = x;
  for (const ConvBn& u : main_) {
    macs += u.macs_per_image(s);
    s = u.output_shape(s);
  }
  return macs;
}

void ResidualBlock::allocate(Device& device, const Shape& x) {
  Shape s = x;
  for (ConvBn& u : main_) {
    u.allocate(device, s);
    s = u.output_shape(s);
  }
  if (shortcut_) shortcut_->allocate(device, x);
  if (out_.defined() && out_.shape() == s && d_main_in_.shape() == x) return;
  out_ = device.zeros(s, device.compute_dtype());
  d_out_ = device.zeros(s, device.compute_dtype());
  d_main_in_ = device.zeros(x, device.compute_dtype());
}

void ResidualBlock::forward(Backend& backend, const Tensor& x, bool training) {
  const Tensor* in = &x;
  for (ConvBn& u : main_) {
    u.forward(backend, *in, training);
    in = &u.out();
  }
  if (shortcut_) shortcut_->forward(backend, x, training);
  backend.add_relu(main_.back().out(), shortcut_ ? shortcut_->out() : x, out_);
}

// Note: gradients are written, and announced with gradient_written, in exactly the reverse of
// the order the parameters were registered in: DDP's buckets are ranges of the flat buffer
// taken from its end and launched the moment their last gradient is in. The shortcut was
// registered after the main branch, so it goes first. A unit out of order stays correct but
// holds its bucket back to the end of backward, losing the overlap.
void ResidualBlock::backward(Backend& backend, const Tensor& x, Tensor* dx) {
  // The gradient at the sum goes unchanged into both branches.
  backend.relu_backward(out_, d_out_, d_out_);
  if (shortcut_) shortcut_->backward(backend, x, d_out_, dx);
  for (size_t i = main_.size(); i-- > 0;) {
    Tensor& dy = i + 1 == main_.size() ? d_out_ : main_[i].d_out();
    Tensor* dest = i > 0 ? &main_[i - 1].d_out() : (dx ? &d_main_in_ : nullptr);
    main_[i].backward(backend, i > 0 ? main_[i - 1].out() : x, dy, dest);
  }
  if (!dx) return;
  backend.add(d_main_in_, shortcut_ ? *dx : d_out_, *dx);
}

}  // namespace ringtrain
