#include "ringtrain/nn/parameters.hpp"

namespace ringtrain {

int ParameterSet::add(const std::string& name, const Shape& shape, ParamKind kind) {
  RT_CHECK(!allocated(), "ParameterSet::add: '", name, "' registered after allocation");
  param_infos_.push_back({name, shape, kind, param_numel_});
  param_numel_ += shape_numel(shape);
  return static_cast<int>(param_infos_.size()) - 1;
}

int ParameterSet::add_buffer(const std::string& name, const Shape& shape) {
  RT_CHECK(!allocated(), "ParameterSet::add_buffer: '", name, "' registered after allocation");
  buffer_infos_.push_back({name, shape, ParamKind::norm_weight, buffer_numel_});
  buffer_numel_ += shape_numel(shape);
  return static_cast<int>(buffer_infos_.size()) - 1;
}

void ParameterSet::allocate(Device& device, DType dtype) {
  const bool mixed = dtype == DType::f32 && device.compute_dtype() != DType::f32;
  params_ = device.zeros({param_numel_}, dtype);
  weights_ = mixed ? device.zeros({param_numel_}, device.compute_dtype()) : params_;
  grads_ = device.zeros({param_numel_}, weights_.dtype());
  buffers_ = device.zeros({buffer_numel_}, dtype);
}

void ParameterSet::refresh_weights(Device& device) {
  if (weights_.raw() != params_.raw()) device.cast(params_, weights_);
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
Tensor ParameterSet::buffer(int id) const {
  return lookup(buffers_, buffer_infos_, id, "buffer");
}

std::vector<DecayRun> ParameterSet::decay_runs(bool decay_norm_and_bias) const {
  std::vector<DecayRun> runs;
  for (const ParamInfo& p : param_infos_) {
    const bool exempt = p.kind == ParamKind::norm_weight || p.kind == ParamKind::norm_bias ||
                        p.kind == ParamKind::linear_bias;
    const bool decay = decay_norm_and_bias || !exempt;
    const int64_t size = shape_numel(p.shape);
    if (!runs.empty() && runs.back().decay == decay) {
      runs.back().size += size;
    } else {
      runs.push_back({p.offset, size, decay});
    }
  }
  return runs;
}

}  // namespace ringtrain
