#pragma once
#include <string>
#include <vector>

#include "ringtrain/backend/backend.hpp"
#include "ringtrain/distributed/communicator.hpp"
#include "ringtrain/nn/parameters.hpp"
#include "ringtrain/prof/host_spans.hpp"
#include "ringtrain/prof/step_profiler.hpp"

namespace ringtrain {

struct DdpConfig {
  double bucket_cap_mb = 25.0;
  double first_bucket_mb = 1.0;  // small, as PyTorch's, so communication starts early
  bool overlap = true;           // false: every bucket after backward (to measure overlap)
  bool bf16_wire = false;        // all-reduce a bf16 copy of each bucket (--grad-comm bf16)
};

// DistributedDataParallel over a flat gradient buffer. Buckets are ranges of that buffer in
// backward order (the last parameters first); each is all-reduced (averaged) the moment the
// last of its gradients is written, while backward goes on; finish_gradients() waits for all.
// Note: the gradients travel in their own dtype (f32, also under mixed precision) unless
// bf16_wire asks for half the bytes: each bucket is then rounded to bf16 once, summed in bf16
// by the collective and widened back into the f32 gradients. Accumulation over micro-batches
// stays f32 either way; only the sum over the ranks loses bits.
class DistributedDataParallel {
 public:
  struct Bucket {
    int64_t offset = 0, size = 0;  // elements of the flat buffer
    int params = 0, ready = 0;
    bool launched = false, launched_during_backward = false;
    CommHandle handle = 0;
    double launch_s = 0;  // traced: when it was launched, on the profiler's host clock
  };

  DistributedDataParallel(ParameterSet& params, Communicator& comm, Backend& backend,
                          const DdpConfig& config);
  ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  // Rank 0's parameters and buffers to every rank (at start).
  void broadcast_state();
  // Rank 0's batch-norm running statistics to every rank (before evaluation and checkpoints:
  // ranks see different batches, so their running statistics drift apart).
  void broadcast_buffers();
  // Gradient accumulation (PyTorch's no_sync): before each micro-batch's backward, whether
  // this backward ends the step. Backward adds to the gradients, so the earlier micro-batches'
  // backwards only accumulate and the last one all-reduces the sums.
  void set_sync(bool sync) { communicate_ = sync; }
  // After backward: launches what is not launched yet, waits for every bucket (nothing to
  // communicate after a backward without sync).
  void finish_gradients();

  const std::vector<Bucket>& buckets() const { return buckets_; }

  // With a profiler in trace mode: every bucket's all-reduce from now on becomes an
  // AllReduceSpan on the profiler's host clock, numbered with its step. Otherwise (nullptr, or
  // another mode) nothing is recorded: no clock is read, nothing allocated.
  void trace_buckets(const StepProfiler* profiler);
  const std::vector<AllReduceSpan>& traced() const { return traced_; }

 private:
  // Collective: throws on every rank when the ranks' parameter layouts differ.
  void check_same_model();
  void on_gradient(int id);
  std::string describe_param(int id) const;  // "layer3.2.conv2.weight [256,256,3,3]"
  void launch(Bucket& b, bool during_backward);
  void wait_for(Bucket& b, int index);
  Tensor range(Tensor& flat, const Bucket& b) const { return flat.slice(b.offset, {b.size}); }

  ParameterSet& params_;
  Communicator& comm_;
  Backend& backend_;
  DdpConfig config_;
  bool communicate_ = true;
  std::vector<Bucket> buckets_;
  std::vector<int> bucket_of_;  // parameter id -> bucket
  Tensor wire_;                 // bf16_wire: the buckets' bf16 copies, laid out as the gradients
  const StepProfiler* trace_ = nullptr;
  std::vector<AllReduceSpan> traced_;
};

}  // namespace ringtrain
