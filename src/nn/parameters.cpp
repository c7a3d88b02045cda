#include "ringtrain/nn/parameters.hpp"

namespace ringtrain {

namespace {

// Note: params (f32 or f64), weights and grads (the compute dtype: 2 or 4 bytes) share element
// offsets, so offsets are multiples of 128 elements: 256 bytes in 2-byte buffers, 512 in f32,
// 1024 in f64. With every buffer's base 256-byte aligned (cudaMalloc, Tensor::zeros), every
// parameter's view is 256-byte aligned in every buffer, as cuDNN and vector loads want. The
// padding between parameters is zero and stays zero: its gradients are zero, so SGD (momentum,
// weight decay) leaves it at zero.
constexpr int64_t kAlignElements = 128;

int64_t aligned(int64_t offset) {
  return (offset + kAlignElements - 1) / kAlignElements * kAlignElements;
}

}  // namespace

int ParameterSet::add(const std::string& name, const Shape& shape, ParamKind kind) {
  RT_CHECK(!allocated(), "ParameterSet::add: '", name, "' registered after allocation");
  param_infos_.push_back({name, shape, kind, aligned(param_numel_)});
  param_numel_ = param_infos_.back().offset + shape_numel(shape);
  param_count_ += shape_numel(shape);
  return static_cast<int>(param_infos_.size()) - 1;
}

int ParameterSet::add_buffer(const std::string& name, const Shape& shape) {
  RT_CHECK(!allocated(), "ParameterSet::add_buffer: '", name, "' registered after allocation");
  buffer_infos_.push_back({name, shape, ParamKind::norm_weight, aligned(buffer_numel_)});
  buffer_numel_ = buffer_infos_.back().offset + shape_numel(shape);
  return static_cast<int>(buffer_infos_.size()) - 1;
}

int64_t ParameterSet::span(int id) const {
  const size_t i = static_cast<size_t>(id);
  const int64_t end = i + 1 < param_infos_.size() ? param_infos_[i + 1].offset : param_numel_;
  return end - param_infos_.at(i).offset;
}

void ParameterSet::allocate(Device& device, DType dtype) {
  const bool mixed = dtype == DType::f32 && device.compute_dtype() != DType::f32;
  device_ = &device;
  params_ = device.zeros({param_numel_}, dtype);
  weights_ = mixed ? device.zeros({param_numel_}, device.compute_dtype()) : params_;
  grads_ = device.zeros({param_numel_}, dtype);
  backward_grads_ = mixed ? device.zeros({param_numel_}, device.compute_dtype()) : grads_;
  buffers_ = device.zeros({buffer_numel_}, dtype);
}

void ParameterSet::refresh_weights(Device& device) {
  if (weights_.raw() != params_.raw()) device.cast(params_, weights_);
}

// Note: only the gradients the optimizer reads are filled. The compute-dtype ones are zero
// already: allocated so, and cleared by every hand-over, which covers every gradient written.
void ParameterSet::zero_grad(Device& device) {
  device.fill(grads_, 0.0);
}

bool ParameterSet::written_in_compute_dtype(int id) const {
  const ParamKind kind = param_infos_.at(static_cast<size_t>(id)).kind;
  return backward_grads_.raw() != grads_.raw() && kind != ParamKind::norm_weight &&
         kind != ParamKind::norm_bias;
}

void ParameterSet::gradient_written(int id) {
  if (written_in_compute_dtype(id)) {
    const int64_t begin = param_infos_.at(static_cast<size_t>(id)).offset, end = begin + span(id);
    const bool none = unhanded_begin_ == unhanded_end_;
    unhanded_begin_ = none ? begin : std::min(unhanded_begin_, begin);
    unhanded_end_ = none ? end : std::max(unhanded_end_, end);
  }
  if (listener_) listener_(id);
}

void ParameterSet::hand_over_gradients() {
  if (unhanded_begin_ == unhanded_end_) return;
  const int64_t size = unhanded_end_ - unhanded_begin_;
  Tensor from = backward_grads_.slice(unhanded_begin_, {size});
  Tensor to = grads_.slice(unhanded_begin_, {size});
  device_->accumulate(from, to);
  unhanded_begin_ = unhanded_end_ = 0;
}

namespace {

Tensor lookup(const Tensor& flat, const std::vector<ParamInfo>& infos, int id, const char* what) {
  RT_CHECK(flat.defined(), "ParameterSet: ", what, " looked up before allocation");
  const ParamInfo& info = infos.at(static_cast<size_t>(id));
  return flat.slice(info.offset, info.shape);
}

}  // namespace

Tensor ParameterSet::param(int id) const {
  return lookup(params_, param_infos_, id, "parameter");
}
Tensor ParameterSet::weight(int id) const {
  return lookup(weights_, param_infos_, id, "weight");
}
Tensor ParameterSet::grad(int id) const {
  return lookup(grads_, param_infos_, id, "gradient");
}
Tensor ParameterSet::backward_grad(int id) const {
  if (!written_in_compute_dtype(id)) return grad(id);
  return lookup(backward_grads_, param_infos_, id, "backward gradient");
}
Tensor ParameterSet::buffer(int id) const {
  return lookup(buffers_, buffer_infos_, id, "buffer");
}

std::vector<DecayRun> ParameterSet::parameter_runs(bool decay_norm_and_bias) const {
  std::vector<DecayRun> runs;
  for (size_t i = 0; i < param_infos_.size(); ++i) {
    const ParamInfo& p = param_infos_[i];
    const bool exempt = p.kind == ParamKind::norm_weight || p.kind == ParamKind::norm_bias ||
                        p.kind == ParamKind::linear_bias;
    runs.push_back({p.offset, span(static_cast<int>(i)), decay_norm_and_bias || !exempt});
  }
  return runs;
}

std::vector<DecayRun> ParameterSet::decay_runs(bool decay_norm_and_bias) const {
  std::vector<DecayRun> runs;
  for (const DecayRun& run : parameter_runs(decay_norm_and_bias)) {
    if (!runs.empty() && runs.back().decay == run.decay) {
      runs.back().size += run.size;
    } else {
      runs.push_back(run);
    }
  }
  return runs;
}

}  // namespace ringtrain
