#include "ringtrain/parallel/ddp.hpp"

#include "ringtrain/core/hash.hpp"

namespace ringtrain {
namespace {

// The parameters' names and shapes, in order: equal on every rank of one model.
std::string layout_of(const ParameterSet& params) {
  std::string s;
  for (const ParamInfo& p : params.param_infos())
    s += str_cat(p.name, " ", shape_str(p.shape), ";");
  return s;
}

std::string first_and_last(const ParameterSet& params) {
  const auto& infos = params.param_infos();
  if (infos.empty()) return "no parameters";
  return str_cat(infos.size(), " tensors of ", params.param_count(), " values, from ",
                 infos.front().name, " ", shape_str(infos.front().shape), " to ", infos.back().name,
                 " ", shape_str(infos.back().shape));
}

}  // namespace

// Note: the buckets, the broadcasts and every all-reduce assume the same parameters on every
// rank; a rank with another model (another --width, or a --data file with other classes on
// its node) would all-reduce mismatched ranges, or read past a buffer. Each rank contributes a
// small number x derived from its layout; sum(x) and sum(x^2) over n ranks equal n*x and n*x^2
// exactly (whole numbers below 2^53) only when every rank's x is the same.
void DistributedDataParallel::check_same_model() {
  const std::string layout = layout_of(params_);
  const double x = static_cast<double>(xxh64(layout.data(), layout.size()) % (1u << 20));
  double sums[2] = {x, x * x};
  comm_.all_reduce_host(sums, 2, ReduceOp::sum);
  const double n = comm_.size();
  RT_CHECK(sums[0] == n * x && sums[1] == n * x * x, "ddp: the ranks built different models; rank ",
           comm_.rank(), " has ", first_and_last(params_),
           ". Every rank must run the same --depth, --width and --stem on data with the same ",
           "channels and classes: check that --data names the same file on every node");
}

DistributedDataParallel::DistributedDataParallel(ParameterSet& params, Communicator& comm,
                                                 Backend& backend, const DdpConfig& config)
    : params_(params), comm_(comm), backend_(backend), config_(config) {
  RT_CHECK(config.bucket_cap_mb > 0 && config.first_bucket_mb > 0,
           "ddp: bucket sizes must be positive, got ", config.bucket_cap_mb, " and ",
           config.first_bucket_mb, " MB");
  check_same_model();
  const auto& infos = params.param_infos();
  const double element_bytes = static_cast<double>(dtype_size(params.flat_grads().dtype()));
  bucket_of_.assign(infos.size(), -1);
  // Note: backward writes the gradients in reverse registration order (fc first, the stem
  // last), and the flat buffer holds them in registration order, so a bucket is one contiguous
  // range that fills from its end. Buckets are cut in that order: the first to fill is the
  // first all-reduced, while backward still runs the earlier layers. The first bucket is small
  // so that communication starts early; every rank cuts the same buckets from the same
  // parameter list, so their all-reduces pair up without any negotiation.
  // The cap counts parameters, a bucket's range also the padding between them.
  int64_t filled = 0;
  for (size_t i = infos.size(); i-- > 0;) {
    const int64_t n = shape_numel(infos[i].shape);
    const double cap = (buckets_.size() <= 1 ? config.first_bucket_mb : config.bucket_cap_mb) * 1e6;
    if (buckets_.empty() || (filled + n) * element_bytes > cap) {
      buckets_.push_back(Bucket{});
      filled = 0;
    }
    Bucket& b = buckets_.back();
    filled += n;
    b.offset = infos[i].offset;
    b.size += params.span(static_cast<int>(i));
    ++b.params;
    bucket_of_[i] = static_cast<int>(buckets_.size()) - 1;
  }
  if (config.bf16_wire) wire_ = backend.zeros(params.flat_grads().shape(), DType::bf16);
  params_.set_gradient_listener([this](int id) { on_gradient(id); });
}

DistributedDataParallel::~DistributedDataParallel() {
  params_.set_gradient_listener(nullptr);
}

void DistributedDataParallel::broadcast_state() {
  comm_.broadcast(params_.flat_params(), 0);
  params_.refresh_weights(backend_);
  broadcast_buffers();
}

void DistributedDataParallel::broadcast_buffers() {
  if (params_.flat_buffers().numel() > 0) comm_.broadcast(params_.flat_buffers(), 0);
}

void DistributedDataParallel::launch(Bucket& b, bool during_backward) {
  if (trace_) b.launch_s = trace_->clock().seconds();
  params_.hand_over_gradients();  // the bucket's gradients into the f32 ones it sends
  Tensor& grads = params_.flat_grads();
  if (wire_.defined()) {
    Tensor wire = range(wire_, b);
    backend_.cast(range(grads, b), wire);
  }
  Tensor& sent = wire_.defined() ? wire_ : grads;
  b.handle = comm_.all_reduce_async(sent, b.offset, b.size, ReduceOp::average);
  b.launched = true;
  b.launched_during_backward = during_backward;
}

void DistributedDataParallel::trace_buckets(const StepProfiler* profiler) {
  trace_ = profiler && profiler->mode() == ProfileMode::trace ? profiler : nullptr;
}

void DistributedDataParallel::wait_for(Bucket& b, int index) {
  if (!trace_) return comm_.wait(b.handle);
  const double wait_s = trace_->clock().seconds();
  comm_.wait(b.handle);
  const DType sent = wire_.defined() ? wire_.dtype() : params_.flat_grads().dtype();
  const int64_t bytes = b.size * static_cast<int64_t>(dtype_size(sent));
  traced_.push_back({trace_->steps(), index, bytes, b.params, b.launched_during_backward,
                     b.launch_s, wait_s, trace_->clock().seconds()});
}

std::string DistributedDataParallel::describe_param(int id) const {
  const ParamInfo& p = params_.param_infos().at(static_cast<size_t>(id));
  return str_cat(p.name, " ", shape_str(p.shape));
}

void DistributedDataParallel::on_gradient(int id) {
  Bucket& b = buckets_.at(static_cast<size_t>(bucket_of_.at(static_cast<size_t>(id))));
  RT_CHECK(b.ready < b.params, "ddp: the gradient of ", describe_param(id),
           " was written twice in one backward pass; a layer reported it twice (a model bug)");
  if (++b.ready == b.params && config_.overlap && communicate_) launch(b, true);
  comm_.progress();
}

void DistributedDataParallel::finish_gradients() {
  for (Bucket& b : buckets_) {
    RT_CHECK(b.ready == b.params, "ddp: after backward the bucket of ", b.params,
             " parameters at offset ", b.offset, " has only ", b.ready,
             " gradients; every parameter must take part in every backward (a model bug: ",
             "a layer skipped its gradient)");
    if (communicate_ && !b.launched) launch(b, false);
  }
  for (size_t i = 0; i < buckets_.size(); ++i) {
    Bucket& b = buckets_[i];
    if (b.launched) wait_for(b, static_cast<int>(i));
    if (b.launched && wire_.defined()) {
      Tensor grads = range(params_.flat_grads(), b);
      backend_.cast(range(wire_, b), grads);
    }
    b.ready = 0;
    b.launched = false;
  }
}

}  // namespace ringtrain
