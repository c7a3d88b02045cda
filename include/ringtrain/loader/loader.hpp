#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "ringtrain/backend/device.hpp"
#include "ringtrain/loader/augment.hpp"
#include "ringtrain/loader/batch_source.hpp"
#include "ringtrain/loader/sampler.hpp"

namespace ringtrain {

struct LoaderConfig {
  int batch_size = 256;
  int workers = 2;          // 0: assemble in the calling thread
  int prefetch_factor = 2;  // ready slots per worker
  bool persistent_workers = false;
  bool augment = true;  // random crop (zero padding 4) and horizontal flip
  bool shuffle = true;
  bool drop_last = true;  // the last partial batch of an epoch
  int pad = 4;
  uint64_t seed = 0;
  double debug_delay_s = 0;  // tests: each batch takes this much longer to assemble
};

// Assembles batches of one rank's shard of a split. Each of `workers` threads builds whole
// batches (batch k is built by worker k % workers) into its own ring of `prefetch_factor` slots;
// next() hands them out strictly in order. Slots come from Device::host_buffer (pinned memory
// on CUDA). The content of batch k depends only on (seed, epoch, k), never on the worker count.
// With a raw transform (augmentation on the device) a batch carries the uint8 images and the crops
// drawn for them.
class Loader final : public BatchSource {
 public:
  Loader(const Split& split, const ImageTransform& transform, DistributedSampler sampler,
         const LoaderConfig& config, Device& device);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // Starts an epoch: the sampler's permutation for it, and the workers.
  void start_epoch(int64_t epoch) override;
  int64_t batches_per_epoch() const override { return batches_; }
  // The next batch of the epoch in order, or nullptr when the epoch is done.
  const HostBatch* next() override;
  void trace_batches(const HostClock& clock) override;
  std::vector<BatchLane> batch_lanes() const override { return lanes_; }

 private:
  struct Slot {
    Tensor image_storage, label_storage, crop_storage;  // sized for a full batch
    HostBatch batch;           // views of the storage, sized for this batch
    int64_t filled = -1;       // batch index in the slot, -1 when free
    std::exception_ptr error;  // what assembling it threw, rethrown by next()
    BatchSpan span;            // traced: when it was assembled
  };
  struct Worker {
    std::vector<Slot> ring;
    std::thread thread;
    std::mutex mutex;
    std::condition_variable changed;
  };

  // What the workers of one epoch read: fixed once the epoch starts.
  struct EpochPlan {
    int64_t epoch = 0;
    std::shared_ptr<const std::vector<int64_t>> order;
  };

  Slot make_slot(Device& device) const;
  void assemble(const EpochPlan& plan, int64_t batch, Slot& slot) const;
  // assemble(), timed into slot.span when tracing.
  void assemble_timed(const EpochPlan& plan, int64_t batch, Slot& slot) const;
  void run_worker(int w);
  void start_workers();
  void stop_workers();

  const Split& split_;
  const ImageTransform& transform_;
  DistributedSampler sampler_;
  LoaderConfig config_;
  Device& device_;
  int64_t batches_ = 0;
  int64_t next_batch_ = 0;
  EpochPlan plan_;          // guarded by epoch_mutex_ while workers run
  int64_t generation_ = 0;  // bumped by every start_epoch; guarded by epoch_mutex_
  std::atomic<bool> stopping_{false};
  Slot* held_ = nullptr;  // the slot returned by the last next()
  Worker* held_worker_ = nullptr;
  std::vector<std::unique_ptr<Worker>> workers_;
  Slot sync_slot_;  // workers == 0
  const HostClock* trace_clock_ = nullptr;
  std::vector<BatchLane> lanes_;  // traced: lane w for worker w (one lane when synchronous)
  std::mutex epoch_mutex_;
  std::condition_variable epoch_changed_;
};

}  // namespace ringtrain
