#include "ringtrain/nn/conv2d.hpp"

#include <cmath>

#include "ringtrain/nn/init.hpp"

namespace ringtrain {

Conv2d::Conv2d(ParameterSet& params, const std::string& name, int in_channels, int out_channels,
               int kernel, int stride, int pad)
    : params_(&params),
      in_(in_channels),
      out_(out_channels),
      kernel_(kernel),
      stride_(stride),
      pad_(pad),
      weight_(params.add(name + ".weight", {out_channels, in_channels, kernel, kernel},
                         ParamKind::conv_weight)) {}

ConvGeometry Conv2d::geometry(const Shape& x) const {
  RT_CHECK(x.size() == 4 && x[1] == in_, "Conv2d: expected input [N,", in_, ",H,W], got ",
           shape_str(x));
  ConvGeometry g;
  g.n = static_cast<int>(x[0]);
  g.c = in_;
  g.h = static_cast<int>(x[2]);
  g.w = static_cast<int>(x[3]);
  g.k = out_;
  g.r = g.s = kernel_;
  g.stride = stride_;
  g.pad = pad_;
  RT_CHECK(g.p() > 0 && g.q() > 0, "Conv2d: input ", shape_str(x), " too small for ", g.str());
  return g;
}

Shape Conv2d::output_shape(const Shape& x) const {
  const ConvGeometry g = geometry(x);
  return {g.n, g.k, g.p(), g.q()};
}

int64_t Conv2d::macs_per_image(const Shape& x) const {
  Shape one = x;
  one[0] = 1;
  return geometry(one).macs();
}

void Conv2d::init(Device& device, std::mt19937_64& rng) const {
  const double fan_out = double{static_cast<double>(out_)} * kernel_ * kernel_;
  init_normal(device, params_->param(weight_), std::sqrt(2.0 / fan_out), rng);
}

// Note: init writes the f32 master weights (param); the passes read the compute-dtype copy
// (weight), the same tensor without mixed precision. Whoever changes the master weights
// refreshes the copy (ParameterSet::refresh_weights): init, the optimizer, broadcast, loading.
void Conv2d::forward(Backend& backend, const Tensor& x, Tensor& y) const {
  backend.conv_forward(geometry(x.shape()), x, params_->weight(weight_), y);
}

void Conv2d::backward(Backend& backend, const Tensor& x, const Tensor& dy, Tensor* dx) const {
  const ConvGeometry g = geometry(x.shape());
  Tensor dw = params_->backward_grad(weight_);
  backend.conv_backward_filter(g, x, dy, dw);
  // Note: announced before dx is computed, so that DDP can start the all-reduce of a bucket
  // this weight completes while the data gradient is still being computed.
  params_->gradient_written(weight_);
  if (dx) backend.conv_backward_data(g, dy, params_->weight(weight_), *dx);
}

}  // namespace ringtrain
