#pragma once
// The CUDA backend's class, shared by the .cu files that implement its ops (one file per kind
// of op). Activations are NHWC in the compute dtype; parameters f32 with a compute-dtype copy.
#include <map>
#include <memory>
#include <utility>

#include "host_staging.hpp"
#include "ringtrain/backend/backend.hpp"
#include "ringtrain/backend/cuda/capture_pool.hpp"
#include "ringtrain/backend/cuda/conv_algo.hpp"
#include "ringtrain/backend/cuda/conv_algo_cache.hpp"
#include "ringtrain/backend/cuda/cuda_backend.hpp"
#include "ringtrain/backend/cuda/cuda_check.hpp"
#include "ringtrain/backend/kernels/loss.hpp"
#include "ringtrain/core/block_cache.hpp"
#include "ringtrain/core/id_queue.hpp"
#include "types.cuh"

namespace ringtrain::cuda {

struct ConvDescriptors;  // conv.cu

cudnnDataType_t cudnn_dtype(DType t);

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const CudaOptions& options);
  ~CudaBackend() override;

  DeviceId device_id() const override { return DeviceId{DeviceKind::cuda, options_.device}; }
  std::string name() const override;
  DType compute_dtype() const override { return options_.compute; }
  Layout layout() const override { return Layout::nhwc; }

  Tensor zeros(const Shape& shape, DType dtype) override;
  void fill(Tensor& t, double value) override;
  void copy(const Tensor& src, Tensor& dst) override;
  void write(const void* host, std::size_t bytes, Tensor& dst) override;
  void cast(const Tensor& src, Tensor& dst) override;
  void accumulate(Tensor& src, Tensor& dst) override;
  void synchronize() override;
  void bind_thread() override;
  int64_t mark(const char* label) override;
  double seconds_between(int64_t from, int64_t to) override;
  void release_marks(int64_t before) override;
  std::shared_ptr<void> host_buffer(std::size_t bytes) override;
  void copy_to_device_async(const Tensor& host, Tensor& device) override;
  void wait_for_copies() override;
  std::string capture_unsupported() const override { return ""; }
  void begin_capture() override;
  void end_capture() override;
  void replay() override;
  void drop_capture() override;

  void augment(const Tensor& raw, const Tensor& crops, const Tensor& table, int pad,
               Tensor& out) override;

  void conv_forward(const ConvGeometry& g, const Tensor& x, const Tensor& w, Tensor& y) override;
  void conv_backward_data(const ConvGeometry& g, const Tensor& dy, const Tensor& w,
                          Tensor& dx) override;
  void conv_backward_filter(const ConvGeometry& g, const Tensor& x, const Tensor& dy,
                            Tensor& dw) override;

  void batch_norm_sums(const Tensor& x, Tensor& sums) override;
  void batch_norm_forward_from_sums(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                    const Tensor& sums, float momentum, float eps, bool relu,
                                    Tensor& y, Tensor& save_mean, Tensor& save_invstd,
                                    Tensor& running_mean, Tensor& running_var) override;
  void batch_norm_forward_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                               const Tensor& running_mean, const Tensor& running_var, float eps,
                               bool relu, Tensor& y) override;
  void batch_norm_backward_sums(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                const Tensor& beta, const Tensor& save_mean,
                                const Tensor& save_invstd, bool relu, Tensor& sums) override;
  void batch_norm_backward_from_sums(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                     const Tensor& beta, const Tensor& save_mean,
                                     const Tensor& save_invstd, bool relu, const Tensor& local_sums,
                                     const Tensor& global_sums, double count, Tensor& dx,
                                     Tensor& dgamma, Tensor& dbeta) override;
  void batch_norm_add_relu(const Tensor& x, const Tensor& affine, const Tensor& r,
                           const Tensor* r_affine, Tensor& y) override;
  void batch_norm_train_affine(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                               float momentum, float eps, Tensor& sums, Tensor& save_mean,
                               Tensor& save_invstd, Tensor& running_mean, Tensor& running_var,
                               Tensor& affine) override;
  void batch_norm_eval_affine(const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                              const Tensor& running_var, float eps, Tensor& affine) override;
  void batch_norm_forward_train(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                float momentum, float eps, bool relu, Tensor& sums, Tensor& y,
                                Tensor& save_mean, Tensor& save_invstd, Tensor& running_mean,
                                Tensor& running_var) override;
  void batch_norm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                           const Tensor& beta, const Tensor& save_mean, const Tensor& save_invstd,
                           bool relu, Tensor& sums, Tensor& dx, Tensor& dgamma,
                           Tensor& dbeta) override;

  void relu_backward(const Tensor& y, const Tensor& dy, Tensor& dx) override;
  void add(const Tensor& a, const Tensor& b, Tensor& y) override;
  void scale(Tensor& t, double factor) override;
  void add_relu(const Tensor& a, const Tensor& b, Tensor& y) override;

  void max_pool_forward(const PoolGeometry& g, const Tensor& x, Tensor& y) override;
  void max_pool_backward(const PoolGeometry& g, const Tensor& x, const Tensor& y, const Tensor& dy,
                         Tensor& dx) override;
  void global_avg_pool_forward(const Tensor& x, Tensor& y) override;
  void global_avg_pool_backward(const Tensor& dy, Tensor& dx) override;

  void linear_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) override;
  void linear_backward(const Tensor& x, const Tensor& w, const Tensor& dy, Tensor* dx, Tensor& dw,
                       Tensor& db) override;

  double softmax_cross_entropy(const Tensor& logits, const Tensor& labels, float smoothing,
                               Tensor* dlogits, double grad_scale) override;
  int64_t count_correct(const Tensor& logits, const Tensor& labels) override;
  void record_loss(const Tensor& logits, const Tensor& labels, float smoothing, Tensor& dlogits,
                   double grad_scale) override;
  std::vector<LossValue> take_losses() override;
  bool all_finite(const Tensor& t) override;

  void optimizer_step(const DeviceRule& rule, const std::vector<DecayRun>& runs, Tensor& params,
                      const Tensor& grads, const std::vector<Tensor*>& state,
                      const Tensor& run_values) override;
  void sum_squares_per_run(const Tensor& x, const std::vector<DecayRun>& runs,
                           Tensor& out) override;

  cudaStream_t stream() const { return compute_; }
  const BlockCache& memory() const { return *memory_; }

 private:
  void check_on_device(const char* op, const Tensor& t) const;
  // A copy between two tensors in device memory, on this device or across two.
  void copy_between_devices(const Tensor& src, Tensor& dst);
  // y = a + b, then a ReLU when asked.
  void launch_add(const Tensor& a, const Tensor& b, Tensor& y, bool relu);
  // Device memory from the cache, for scratch that lives as long as the returned tensor.
  Tensor scratch(const Shape& shape, DType dtype);
  // The cuDNN workspace, grown to at least `bytes`.
  void* workspace(std::size_t bytes);
  // Batch norm's last phase: y = x * scale + shift per channel (affine = [scale, shift], f32).
  void apply_affine(const Tensor& x, Tensor& y, const Tensor& affine, bool relu);
  // Batch norm backward's last phase: dx from ChannelGradients' table.
  void apply_input_grad(const Tensor& x, const Tensor& dy, const Tensor& save_mean,
                        const Tensor& save_invstd, const Tensor& table, bool relu, Tensor& dx);
  // cuDNN's algorithms for one pass over g, best first.
  std::vector<ConvCandidate> conv_candidates(ConvPass pass, const ConvGeometry& g, DType dtype);
  // The algorithm for one convolution pass, searched for on first use of its key, at the first
  // of channels_to_try that has one.
  ConvChoice conv_algo(const ConvKey& key);
  // The cuDNN descriptors of a convolution of g (channels as run) in dtype with a math type,
  // built on first use and kept.
  const ConvDescriptors& conv_descriptors(const ConvGeometry& g, DType dtype, int math);
  // Checks one pass's x-, w- and y-shaped operands (dtype, NHWC) and returns its algorithm.
  ConvChoice prepare_conv(ConvPass pass, const ConvGeometry& g, const Tensor& x, const Tensor& w,
                          const Tensor& y);
  // t [A, C, B, D] (NHWC or KRSC) widened to `channels` with zeros; t itself when C == channels.
  Tensor pad_channels(const Tensor& t, int channels);
  // t = (or +=) the first t.dim(1) channels of wide.
  void drop_channels(const Tensor& wide, Tensor& t, bool accumulate);
  // A small device result copied back through pinned memory, waiting for the compute stream.
  template <class T>
  T read_scalar(const T* device_value);
  // Where one batch's loss values go on the device: the sum of the rows' losses (f64), 1 + the
  // first row with a bad label or 0 (i32), and the count of correct rows (i32).
  struct LossOutputs {
    double* loss_sum;
    int* bad_row;
    int* correct;
  };
  // One launch for a batch's loss, then `extra` finishing steps (record_loss's LogAppend).
  template <class... Extra>
  void launch_loss(const char* op, const Tensor& logits, const Tensor& labels, float smoothing,
                   Tensor* dlogits, double grad_scale, const LossOutputs& out,
                   const kernels::FinishStep<Extra>&... extra);
  void launch_count_correct(const char* op, const Tensor& logits, const Tensor& labels,
                            int* correct);
  static void check_bad_row(const char* op, int bad_row, int classes);
  // The loss log (record_loss): kernels::LossLog on the device and its pinned host copy; a full
  // log is read into drained_ before the next batch is recorded.
  void read_loss_log();
  kernels::LossLog* loss_log() { return static_cast<kernels::LossLog*>(loss_log_.raw()); }
  Tensor loss_log_;                            // the device's LossLog, as bytes
  kernels::LossLog* loss_log_host_ = nullptr;  // pinned
  int log_entries_ = 0;                        // batches the device's log holds once work is done
  std::vector<LossValue> drained_;             // read from a full log, not taken yet
  CudaOptions options_;
  cudaStream_t compute_ = nullptr, copy_ = nullptr;
  cudaEvent_t compute_mark_ = nullptr, copies_done_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  std::shared_ptr<BlockCache> memory_;
  ConvAlgoCache algos_;
  // Note: shared_ptr, whose deleter is made where ConvDescriptors is complete (conv.cu).
  using ConvDescriptorKey = std::pair<ConvKey, int>;  // the shape and dtype, the math type
  std::map<ConvDescriptorKey, std::shared_ptr<const ConvDescriptors>> conv_descriptors_;
  std::unique_ptr<ConvAlgoFile> algo_file_;  // null: searches are not kept
  Tensor workspace_;
  Tensor cublas_workspace_;  // cublasSetWorkspace's
  Tensor arrivals_;          // one u32, 0 between launches: launch_then_finish's count of blocks
  unsigned* arrivals() { return static_cast<unsigned*>(arrivals_.raw()); }
  // The optimizer's runs, and their pieces for sum_squares_per_run, on the device: copied when
  // the runs change (once per run, as the optimizer keeps them).
  struct RunTable {
    std::vector<DecayRun> runs;
    Tensor runs_device, pieces_device, first_piece_device;
    int64_t piece_count = 0;
  };
  const RunTable& run_table(const std::vector<DecayRun>& runs);
  Tensor upload(const void* data, int64_t bytes);
  RunTable run_table_;
  void* host_scalar_ = nullptr;           // pinned, 8 bytes
  std::unique_ptr<HostStaging> staging_;  // write()'s pinned slots
  // A captured step (graph.cu): its graph, the memory it uses and the loss-log entries one
  // replay appends. capture_ is the one being captured, graph_ the one kept.
  struct CapturedStep {
    cudaGraphExec_t exec = nullptr;
    std::shared_ptr<CapturePool> pool;
    int log_entries = 0;
  };
  std::unique_ptr<CapturedStep> capture_, graph_;
  // Ends a capture that an error interrupted, keeping nothing.
  void abandon_capture();
  IdQueue<cudaEvent_t> marks_;           // timing events not yet released
  std::vector<cudaEvent_t> free_marks_;  // released ones, to record again
  bool nvtx_open_ = false;               // an NVTX range pushed by mark() and not popped yet
};

}  // namespace ringtrain::cuda
