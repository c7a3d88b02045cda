#pragma once
// A backend that captures and replays as a CUDA graph does, on the CPU: the replay tests' device.
#include <cstring>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "ringtrain/backend/backend.hpp"
#include "ringtrain/core/error.hpp"

namespace ringtrain::test {

// Runs another backend's ops; between begin_capture() and end_capture() it keeps them instead
// of running them (their tensors by handle, so the same memory; their scalars by value), and
// replay() runs the kept ops again in order. A step replayed from it therefore uses the host
// values it was captured with, exactly as a CUDA graph does: a learning rate passed to an op as
// an argument, or a batch read from where the capture found it, replays wrongly here too. What
// a capture cannot hold (a value read back, a wait, a write from the host, a profiler mark)
// throws while capturing.
class RecordingBackend final : public Backend {
 public:
  explicit RecordingBackend(Backend& inner) : inner_(inner) {}

  DeviceId device_id() const override { return inner_.device_id(); }
  std::string name() const override { return "recording " + inner_.name(); }
  DType compute_dtype() const override { return inner_.compute_dtype(); }
  Layout layout() const override { return inner_.layout(); }

  // A capture's zeros are zero again at each replay, as a captured memset is.
  Tensor zeros(const Shape& shape, DType dtype) override {
    Tensor t = inner_.zeros(shape, dtype);
    if (capturing_) ops_.push_back([t] { std::memset(t.raw(), 0, t.nbytes()); });
    return t;
  }
  void fill(Tensor& t, double value) override {
    issue([this, t, value]() mutable { inner_.fill(t, value); });
  }
  void copy(const Tensor& src, Tensor& dst) override {
    issue([this, src, dst]() mutable { inner_.copy(src, dst); });
  }
  void write(const void* host, std::size_t bytes, Tensor& dst) override {
    refuse("a write from the host");
    inner_.write(host, bytes, dst);
  }
  void cast(const Tensor& src, Tensor& dst) override {
    issue([this, src, dst]() mutable { inner_.cast(src, dst); });
  }
  void accumulate(Tensor& src, Tensor& dst) override {
    issue([this, src, dst]() mutable { inner_.accumulate(src, dst); });
  }
  void synchronize() override {
    refuse("a wait for the device");
    inner_.synchronize();
  }
  void bind_thread() override { inner_.bind_thread(); }
  int64_t mark(const char* label) override {
    refuse("a profiler mark");
    return inner_.mark(label);
  }
  double seconds_between(int64_t from, int64_t to) override {
    refuse("a profiler read");
    return inner_.seconds_between(from, to);
  }
  void release_marks(int64_t before) override { inner_.release_marks(before); }
  std::shared_ptr<void> host_buffer(std::size_t bytes) override {
    return inner_.host_buffer(bytes);
  }
  void copy_to_device_async(const Tensor& host, Tensor& device) override {
    refuse("a copy from the host");
    inner_.copy_to_device_async(host, device);
  }
  void wait_for_copies() override {
    refuse("a wait for the copies");
    inner_.wait_for_copies();
  }

  std::string capture_unsupported() const override { return ""; }
  void begin_capture() override {
    RT_CHECK(!capturing_, "recording backend: a capture is already open");
    ops_.clear();
    capturing_ = true;
  }
  void end_capture() override {
    RT_CHECK(capturing_, "recording backend: no capture is open");
    capturing_ = false;
    kept_ = std::move(ops_);
    ops_.clear();
  }
  void replay() override {
    RT_CHECK(!kept_.empty(), "recording backend: nothing captured");
    for (const auto& op : kept_) op();
  }
  void drop_capture() override {
    capturing_ = false;
    ops_.clear();
    kept_.clear();
  }

  void augment(const Tensor& raw, const Tensor& crops, const Tensor& table, int pad,
               Tensor& out) override {
    issue([=]() mutable { inner_.augment(raw, crops, table, pad, out); });
  }
  void conv_forward(const ConvGeometry& g, const Tensor& x, const Tensor& w, Tensor& y) override {
    issue([=]() mutable { inner_.conv_forward(g, x, w, y); });
  }
  void conv_backward_data(const ConvGeometry& g, const Tensor& dy, const Tensor& w,
                          Tensor& dx) override {
    issue([=]() mutable { inner_.conv_backward_data(g, dy, w, dx); });
  }
  void conv_backward_filter(const ConvGeometry& g, const Tensor& x, const Tensor& dy,
                            Tensor& dw) override {
    issue([=]() mutable { inner_.conv_backward_filter(g, x, dy, dw); });
  }
  void batch_norm_sums(const Tensor& x, Tensor& sums) override {
    issue([=]() mutable { inner_.batch_norm_sums(x, sums); });
  }
  void batch_norm_forward_from_sums(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                    const Tensor& sums, float momentum, float eps, bool relu,
                                    Tensor& y, Tensor& save_mean, Tensor& save_invstd,
                                    Tensor& running_mean, Tensor& running_var) override {
    issue([=]() mutable {
      inner_.batch_norm_forward_from_sums(x, gamma, beta, sums, momentum, eps, relu, y, save_mean,
                                          save_invstd, running_mean, running_var);
    });
  }
  void batch_norm_forward_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                               const Tensor& running_mean, const Tensor& running_var, float eps,
                               bool relu, Tensor& y) override {
    issue([=]() mutable {
      inner_.batch_norm_forward_eval(x, gamma, beta, running_mean, running_var, eps, relu, y);
    });
  }
  void batch_norm_backward_sums(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                const Tensor& beta, const Tensor& save_mean,
                                const Tensor& save_invstd, bool relu, Tensor& sums) override {
    issue([=]() mutable {
      inner_.batch_norm_backward_sums(x, dy, gamma, beta, save_mean, save_invstd, relu, sums);
    });
  }
  void batch_norm_backward_from_sums(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                     const Tensor& beta, const Tensor& save_mean,
                                     const Tensor& save_invstd, bool relu, const Tensor& local_sums,
                                     const Tensor& global_sums, double count, Tensor& dx,
                                     Tensor& dgamma, Tensor& dbeta) override {
    issue([=]() mutable {
      inner_.batch_norm_backward_from_sums(x, dy, gamma, beta, save_mean, save_invstd, relu,
                                           local_sums, global_sums, count, dx, dgamma, dbeta);
    });
  }
  void batch_norm_add_relu(const Tensor& x, const Tensor& affine, const Tensor& r,
                           const Tensor* r_affine, Tensor& y) override {
    const std::optional<Tensor> shortcut =
        r_affine ? std::optional<Tensor>(*r_affine) : std::nullopt;
    issue([=]() mutable {
      inner_.batch_norm_add_relu(x, affine, r, shortcut ? &*shortcut : nullptr, y);
    });
  }
  void batch_norm_train_affine(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                               float momentum, float eps, Tensor& sums, Tensor& save_mean,
                               Tensor& save_invstd, Tensor& running_mean, Tensor& running_var,
                               Tensor& affine) override {
    issue([=]() mutable {
      inner_.batch_norm_train_affine(x, gamma, beta, momentum, eps, sums, save_mean, save_invstd,
                                     running_mean, running_var, affine);
    });
  }
  void batch_norm_eval_affine(const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                              const Tensor& running_var, float eps, Tensor& affine) override {
    issue([=]() mutable {
      inner_.batch_norm_eval_affine(gamma, beta, running_mean, running_var, eps, affine);
    });
  }
  void relu_backward(const Tensor& y, const Tensor& dy, Tensor& dx) override {
    issue([=]() mutable { inner_.relu_backward(y, dy, dx); });
  }
  void add(const Tensor& a, const Tensor& b, Tensor& y) override {
    issue([=]() mutable { inner_.add(a, b, y); });
  }
  void scale(Tensor& t, double factor) override {
    issue([=]() mutable { inner_.scale(t, factor); });
  }
  void add_relu(const Tensor& a, const Tensor& b, Tensor& y) override {
    issue([=]() mutable { inner_.add_relu(a, b, y); });
  }
  void max_pool_forward(const PoolGeometry& g, const Tensor& x, Tensor& y) override {
    issue([=]() mutable { inner_.max_pool_forward(g, x, y); });
  }
  void max_pool_backward(const PoolGeometry& g, const Tensor& x, const Tensor& y, const Tensor& dy,
                         Tensor& dx) override {
    issue([=]() mutable { inner_.max_pool_backward(g, x, y, dy, dx); });
  }
  void global_avg_pool_forward(const Tensor& x, Tensor& y) override {
    issue([=]() mutable { inner_.global_avg_pool_forward(x, y); });
  }
  void global_avg_pool_backward(const Tensor& dy, Tensor& dx) override {
    issue([=]() mutable { inner_.global_avg_pool_backward(dy, dx); });
  }
  void linear_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) override {
    issue([=]() mutable { inner_.linear_forward(x, w, b, y); });
  }
  void linear_backward(const Tensor& x, const Tensor& w, const Tensor& dy, Tensor* dx, Tensor& dw,
                       Tensor& db) override {
    const std::optional<Tensor> input_grad = dx ? std::optional<Tensor>(*dx) : std::nullopt;
    issue([=]() mutable {
      std::optional<Tensor> out = input_grad;
      inner_.linear_backward(x, w, dy, out ? &*out : nullptr, dw, db);
    });
  }
  double softmax_cross_entropy(const Tensor& logits, const Tensor& labels, float smoothing,
                               Tensor* dlogits, double grad_scale) override {
    refuse("a loss read back");
    return inner_.softmax_cross_entropy(logits, labels, smoothing, dlogits, grad_scale);
  }
  int64_t count_correct(const Tensor& logits, const Tensor& labels) override {
    refuse("a count read back");
    return inner_.count_correct(logits, labels);
  }
  void record_loss(const Tensor& logits, const Tensor& labels, float smoothing, Tensor& dlogits,
                   double grad_scale) override {
    issue([=]() mutable { inner_.record_loss(logits, labels, smoothing, dlogits, grad_scale); });
  }
  std::vector<LossValue> take_losses() override {
    refuse("the loss log read back");
    return inner_.take_losses();
  }
  bool all_finite(const Tensor& t) override {
    refuse("a finite check read back");
    return inner_.all_finite(t);
  }
  void optimizer_step(const DeviceRule& rule, const std::vector<DecayRun>& runs, Tensor& params,
                      const Tensor& grads, const std::vector<Tensor*>& state,
                      const Tensor& run_values) override {
    std::vector<Tensor> kept_state;
    for (const Tensor* s : state) kept_state.push_back(*s);
    issue([=]() mutable {
      std::vector<Tensor*> pointers;
      for (Tensor& s : kept_state) pointers.push_back(&s);
      inner_.optimizer_step(rule, runs, params, grads, pointers, run_values);
    });
  }
  void sum_squares_per_run(const Tensor& x, const std::vector<DecayRun>& runs,
                           Tensor& out) override {
    issue([=]() mutable { inner_.sum_squares_per_run(x, runs, out); });
  }

 private:
  // Runs op now, or keeps it while capturing.
  void issue(std::function<void()> op) {
    if (capturing_) {
      ops_.push_back(std::move(op));
    } else {
      op();
    }
  }
  void refuse(const char* what) const {
    RT_CHECK(!capturing_, "recording backend: ", what, " inside a capture");
  }

  Backend& inner_;
  bool capturing_ = false;
  std::vector<std::function<void()>> ops_, kept_;
};

}  // namespace ringtrain::test
