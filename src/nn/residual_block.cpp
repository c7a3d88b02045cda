#include "ringtrain/nn/residual_block.hpp"

#include <algorithm>

namespace ringtrain {

ConvBn::ConvBn(ParameterSet& params, const std::string& name, int in_channels, int out_channels,
               int kernel, int stride, bool relu)
    : conv_(params, name + ".conv", in_channels, out_channels, kernel, stride, kernel / 2),
      bn_(params, name + ".bn", out_channels, relu) {}

void ConvBn::init(Device& device, std::mt19937_64& rng, bool zero_norm_weight) const {
  conv_.init(device, rng);
  bn_.init(device, zero_norm_weight);
}

void ConvBn::allocate(Device& device, const Shape& x) {
  const Shape y = output_shape(x);
  if (conv_out_.defined() && conv_out_.shape() == y) return;
  conv_out_ = device.zeros(y, device.compute_dtype());
}

void ConvBn::forward(Backend& backend, const Tensor& x, Tensor& y, bool training) {
  conv_.forward(backend, x, conv_out_);
  bn_.forward(backend, conv_out_, y, training);
}

const Tensor& ConvBn::forward_affine(Backend& backend, const Tensor& x, bool training) {
  conv_.forward(backend, x, conv_out_);
  return bn_.forward_affine(backend, conv_out_, training);
}

void ConvBn::backward(Backend& backend, const Tensor& x, const Tensor& dy, Tensor& d_conv,
                      Tensor* dx) {
  bn_.backward(backend, conv_out_, dy, d_conv);
  conv_.backward(backend, x, d_conv, dx);
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

int64_t ResidualBlock::allocate(Device& device, const Shape& x) {
  int64_t largest = shape_numel(x);  // the input gradient
  unit_out_.resize(main_.size() - 1);
  Shape s = x;
  for (size_t i = 0; i < main_.size(); ++i) {
    main_[i].allocate(device, s);
    s = main_[i].output_shape(s);
    largest = std::max(largest, shape_numel(s));
    if (i + 1 < main_.size() && unit_out_[i].shape() != s)
      unit_out_[i] = device.zeros(s, device.compute_dtype());
  }
  if (shortcut_) shortcut_->allocate(device, x);
  if (out_.shape() != s) out_ = device.zeros(s, device.compute_dtype());
  return largest;
}

bool ResidualBlock::fuses_tail() const {
  return main_.back().fuses_forward() && (!shortcut_ || shortcut_->fuses_forward());
}

// Note: the block's end in one pass (Ops::batch_norm_add_relu): the last unit's and the
// shortcut's batch norms are applied where they are added, so neither output is written to
// memory and read back. Backward is unchanged: it reads the convolutions' outputs and out_.
void ResidualBlock::forward_tail(Backend& backend, const Tensor& in, const Tensor& x,
                                 bool training) {
  ConvBn& tail = main_.back();
  const Tensor& affine = tail.forward_affine(backend, in, training);
  if (!shortcut_) {
    backend.batch_norm_add_relu(tail.conv_out(), affine, x, nullptr, out_);
    return;
  }
  const Tensor& shortcut_affine = shortcut_->forward_affine(backend, x, training);
  backend.batch_norm_add_relu(tail.conv_out(), affine, shortcut_->conv_out(), &shortcut_affine,
                              out_);
}

// The main branch's units in turn; then relu(main + shortcut), in one pass (forward_tail) or,
// with SyncBatchNorm, by the last unit writing into the block's output and the sum taken there
// in place.
void ResidualBlock::forward(Backend& backend, const Tensor& x, bool training, const Workspace& ws) {
  const Tensor* in = &x;
  for (size_t i = 0; i + 1 < main_.size(); ++i) {
    main_[i].forward(backend, *in, unit_out_[i], training);
    in = &unit_out_[i];
  }
  if (fuses_tail()) {
    forward_tail(backend, *in, x, training);
    return;
  }
  main_.back().forward(backend, *in, out_, training);
  Tensor shortcut;
  if (shortcut_) {
    shortcut = ws.at(Workspace::scratch, out_.shape());
    shortcut_->forward(backend, x, shortcut, training);
  }
  backend.add_relu(out_, shortcut_ ? shortcut : x, out_);
}

// Note: gradients are written, and announced with gradient_written, in exactly the reverse of
// the order the parameters were registered in: DDP's buckets are ranges of the flat buffer
// taken from its end and launched the moment their last gradient is in. The shortcut was
// registered after the main branch, so it goes first. A unit out of order stays correct but
// holds its bucket back to the end of backward, losing the overlap.
void ResidualBlock::backward(Backend& backend, const Tensor& x, Tensor& dy, Tensor* dx,
                             const Workspace& ws) {
  // The gradient at the sum goes unchanged into both branches.
  backend.relu_backward(out_, dy, dy);
  Tensor d_conv = ws.at(Workspace::scratch, out_.shape());
  if (shortcut_) shortcut_->backward(backend, x, dy, d_conv, dx);
  // Unit i reads the gradient at its output from `next` and writes the one at its input into
  // the chain slot, which unit i - 1 reads.
  Tensor next = dy;
  for (size_t i = main_.size(); i-- > 0;) {
    const Tensor& in = i > 0 ? unit_out_[i - 1] : x;
    Tensor d_in = ws.at(Workspace::chain, in.shape());
    d_conv = ws.at(Workspace::scratch, next.shape());
    main_[i].backward(backend, in, next, d_conv, i > 0 || dx ? &d_in : nullptr);
    next = d_in;
  }
  if (!dx) return;
  backend.add(next, shortcut_ ? *dx : dy, *dx);
}

}  // namespace ringtrain
