#pragma once
#include <functional>
#include <string>
#include <vector>

#include "ringtrain/backend/backend.hpp"

namespace ringtrain {

enum class ParamKind { conv_weight, norm_weight, norm_bias, linear_weight, linear_bias };

struct ParamInfo {
  std::string name;
  Shape shape;
  ParamKind kind;
  int64_t offset = 0;  // elements into the flat buffer
};

// Every parameter of a model in one flat buffer, every gradient in a second one with the same
// layout, and the non-trained state (batch-norm running statistics) in a third. With mixed
// precision (f32 parameters on a backend computing in bf16 or f16) the parameters are the f32
// master weights and the ops read a compute-dtype copy of them (refresh_weights after every
// change). Parameters are laid out in registration (forward) order, so the backward pass writes
// the gradient buffer from its end to its start: DDP buckets are plain ranges, the optimizer is
// one pass. Every parameter (and buffer) starts 256-byte aligned; the zero padding between them
// is part of the flat buffers.
// Note: the gradients the optimizer, DDP and DataParallel read are in the parameters' dtype
// (f32 master gradients under mixed precision, as PyTorch's autocast keeps them). Backward
// writes a parameter's gradient in the compute dtype into backward_grad(id); gradient_written
// adds it to grad(id) in f32 and clears it, so micro-batches accumulate in f32: summed in bf16,
// 256 + 1 + 1 + 1 would stay 256. Batch norm's gamma and beta are the exception: their backward
// gradient is grad(id) itself. Each is a sum over every row of the batch (up to N*H*W = 262,144
// terms), which bf16 would round to 8 significant bits, and PyTorch keeps them in f32; they are
// per channel, so writing f32 costs nothing, and no hand-over is needed.
class ParameterSet {
 public:
  // Registration, before allocate(). Returns the id to look the tensor up with.
  int add(const std::string& name, const Shape& shape, ParamKind kind);
  int add_buffer(const std::string& name, const Shape& shape);

  void allocate(Device& device, DType dtype);
  bool allocated() const { return params_.defined(); }

  Tensor param(int id) const;
  Tensor weight(int id) const;  // the compute-dtype copy the ops read
  Tensor grad(int id) const;    // the accumulated gradient, in the parameters' dtype
  // Where backward adds parameter id's gradient: grad(id) itself without mixed precision and
  // for batch norm's parameters, else a compute-dtype buffer that gradient_written empties into
  // grad(id).
  Tensor backward_grad(int id) const;
  Tensor buffer(int id) const;
  // Copies the master parameters into the compute-dtype copy (nothing without mixed precision).
  void refresh_weights(Device& device);
  // Backward adds to the gradients: a step starts by zeroing them (grad(id); the compute-dtype
  // buffer is zero between hand-overs).
  void zero_grad(Device& device);

  const std::vector<ParamInfo>& param_infos() const { return param_infos_; }
  const std::vector<ParamInfo>& buffer_infos() const { return buffer_infos_; }
  Tensor& flat_params() { return params_; }
  Tensor& flat_grads() { return grads_; }
  Tensor& flat_buffers() { return buffers_; }
  // The number of parameters (the padding not counted); the flat buffers are flat_size() long.
  int64_t param_count() const { return param_count_; }
  int64_t flat_size() const { return param_numel_; }
  // Parameter id's range of the flat buffer, the padding after it included: consecutive
  // parameters' spans tile the buffer.
  int64_t span(int id) const;

  // Layers call gradient_written(id) once backward_grad(id) is final for this backward pass; it
  // tells the listener. DDP listens to launch each bucket the moment its last gradient is
  // written. Under mixed precision the gradient is then still in the compute dtype:
  // hand_over_gradients() adds every gradient written since the last hand-over into grad(id)
  // in f32, and clears them, in one pass over the span they cover. Whoever reads grad() after
  // a backward pass hands them over first: the end of backward (backward_from_loss) and DDP,
  // before it sends a bucket.
  void gradient_written(int id);
  void hand_over_gradients();
  void set_gradient_listener(std::function<void(int)> listener) { listener_ = std::move(listener); }

  // One range of the flat buffer per parameter, in order, with its weight-decay flag; norm and
  // bias parameters are excluded when decay_norm_and_bias is false. The ranges cover the whole
  // buffer (a parameter's padding goes with it).
  std::vector<DecayRun> parameter_runs(bool decay_norm_and_bias) const;
  // parameter_runs with adjacent ranges of the same flag merged: the fewest runs for a rule
  // that is element-wise.
  std::vector<DecayRun> decay_runs(bool decay_norm_and_bias) const;

 private:
  std::vector<ParamInfo> param_infos_, buffer_infos_;
  int64_t param_numel_ = 0, buffer_numel_ = 0, param_count_ = 0;
  Device* device_ = nullptr;  // the one allocate() was given
  Tensor params_, weights_, grads_, backward_grads_, buffers_;
  std::function<void(int)> listener_;
  // Whether backward_grad(id) is the compute-dtype buffer, handed over by hand_over_gradients.
  bool written_in_compute_dtype(int id) const;
  // The span of the flat buffer holding compute-dtype gradients not handed over yet (empty when
  // begin == end): the hull of those written, so gradients written out of order are covered
  // too, with the zeros between them.
  int64_t unhanded_begin_ = 0, unhanded_end_ = 0;
};

}  // namespace ringtrain
