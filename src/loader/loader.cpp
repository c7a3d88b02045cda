#include "ringtrain/loader/loader.hpp"

#include <chrono>
#include <thread>

#include "ringtrain/core/thread_pool.hpp"

namespace ringtrain {

Loader::Loader(const Split& split, const ImageTransform& transform, DistributedSampler sampler,
               const LoaderConfig& config, Device& device)
    : split_(split),
      transform_(transform),
      sampler_(std::move(sampler)),
      config_(config),
      device_(device) {
  RT_CHECK(config.batch_size > 0, "loader: batch size must be positive, got ", config.batch_size);
  RT_CHECK(config.workers >= 0, "loader: --workers must be >= 0, got ", config.workers);
  RT_CHECK(config.prefetch_factor > 0, "loader: --prefetch-factor must be positive, got ",
           config.prefetch_factor);
  const int64_t n = sampler_.per_rank(), b = config.batch_size;
  batches_ = config.drop_last ? n / b : (n + b - 1) / b;
  RT_CHECK(batches_ > 0, "loader: batch size ", b, " is larger than the ", n,
           " samples of this rank (drop-last)");
  if (config.workers == 0) sync_slot_ = make_slot(device);
}

Loader::~Loader() {
  stop_workers();
}

// Note: slots are allocated once per run from Device::host_buffer (pinned on CUDA) and reused
// for every batch: only from pinned memory does cudaMemcpyAsync run asynchronously (from
// pageable memory it stages through a driver buffer and blocks the host), and pinning is too
// slow to do per batch.
Loader::Slot Loader::make_slot(Device& device) const {
  const int b = config_.batch_size;
  Slot s;
  s.image_storage = Tensor::adopt(device.host_buffer(b * transform_.image_bytes()),
                                  {b, split_.channels, split_.height, split_.width},
                                  transform_.dtype(), DeviceId{}, transform_.layout());
  s.label_storage = Tensor::adopt(device.host_buffer(b * sizeof(int32_t)), {b}, DType::i32, {});
  if (transform_.raw())
    s.crop_storage =
        Tensor::adopt(device.host_buffer(3 * b * sizeof(int32_t)), {b, 3}, DType::i32, {});
  return s;
}

void Loader::assemble(const EpochPlan& plan, int64_t batch, Slot& slot) const {
  const int64_t first = batch * config_.batch_size;
  const int n = static_cast<int>(
      std::min<int64_t>(config_.batch_size, static_cast<int64_t>(plan.order->size()) - first));
  char* images = static_cast<char*>(slot.image_storage.raw());
  int32_t* labels = slot.label_storage.data<int32_t>();
  int32_t* crops = transform_.raw() ? slot.crop_storage.data<int32_t>() : nullptr;
  for (int i = 0; i < n; ++i) {
    const int64_t sample = (*plan.order)[static_cast<size_t>(first + i)];
    const Crop crop = draw_crop(config_.seed, plan.epoch, sample, config_.pad, config_.augment);
    transform_.write(sample, crop, images + i * transform_.image_bytes());
    labels[i] = split_.labels[static_cast<size_t>(sample)];
    if (crops) {
      crops[3 * i] = crop.dy;
      crops[3 * i + 1] = crop.dx;
      crops[3 * i + 2] = crop.flip;
    }
  }
  if (config_.debug_delay_s > 0)
    std::this_thread::sleep_for(std::chrono::duration<double>(config_.debug_delay_s));
  slot.batch.index = batch;
  slot.batch.images =
      slot.image_storage.slice(0, {n, split_.channels, split_.height, split_.width});
  slot.batch.labels = slot.label_storage.slice(0, {n});
  if (crops) slot.batch.crops = slot.crop_storage.slice(0, {n, 3});
}

void Loader::assemble_timed(const EpochPlan& plan, int64_t batch, Slot& slot) const {
  if (!trace_clock_) return assemble(plan, batch, slot);
  const double start = trace_clock_->seconds();
  assemble(plan, batch, slot);
  slot.span = {plan.epoch, batch, slot.batch.images.dim(0), start, trace_clock_->seconds() - start};
}

// Note: a worker times its batch into the batch's slot, and next() moves that span to the
// worker's lane when it hands the batch out: the span crosses threads with the batch, under
// the worker's mutex, so the lanes are touched by the calling thread alone and need no lock.
// Batches assembled but never taken (past the end of a run, or of an abandoned epoch) are not
// in the lanes.
void Loader::trace_batches(const HostClock& clock) {
  RT_CHECK(workers_.empty(), "loader: trace_batches() while the workers run; call it before ",
           "start_epoch()");
  trace_clock_ = &clock;
  lanes_.clear();
  if (config_.workers == 0) lanes_.push_back(BatchLane{});
  for (int w = 0; w < config_.workers; ++w) lanes_.push_back(BatchLane{w, {}});
}

void Loader::start_epoch(int64_t epoch) {
  // Workers that are mid-epoch, or not meant to persist, start afresh.
  if (!config_.persistent_workers || next_batch_ < batches_) stop_workers();
  sampler_.set_epoch(epoch);
  {
    std::lock_guard<std::mutex> lock(epoch_mutex_);
    plan_ = {epoch, std::make_shared<const std::vector<int64_t>>(sampler_.indices())};
    ++generation_;
  }
  next_batch_ = 0;
  held_ = nullptr;
  held_worker_ = nullptr;
  if (config_.workers == 0) return;
  if (workers_.empty()) {
    start_workers();
  } else {
    epoch_changed_.notify_all();
  }
}

void Loader::start_workers() {
  for (int w = 0; w < config_.workers; ++w) {
    auto worker = std::make_unique<Worker>();
    for (int p = 0; p < config_.prefetch_factor; ++p) worker->ring.push_back(make_slot(device_));
    workers_.push_back(std::move(worker));
  }
  try {
    for (int w = 0; w < config_.workers; ++w)
      workers_[w]->thread =
          start_thread("loader", w, config_.workers, [this, w] { run_worker(w); });
  } catch (...) {
    stop_workers();
    throw;
  }
}

void Loader::stop_workers() {
  if (workers_.empty()) return;
  {
    std::lock_guard<std::mutex> lock(epoch_mutex_);
    stopping_ = true;
  }
  epoch_changed_.notify_all();
  for (auto& w : workers_) {
    { std::lock_guard<std::mutex> lock(w->mutex); }
    w->changed.notify_all();
  }
  for (auto& w : workers_)
    if (w->thread.joinable()) w->thread.join();
  workers_.clear();
  stopping_ = false;
}

// Worker w builds batches w, w + W, w + 2W, ... of each epoch, batch k into slot (k / W) % P.
void Loader::run_worker(int w) {
  Worker& me = *workers_[w];
  const int W = config_.workers, P = config_.prefetch_factor;
  int64_t seen = 0;
  for (;;) {
    EpochPlan plan;
    {
      std::unique_lock<std::mutex> lock(epoch_mutex_);
      epoch_changed_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      plan = plan_;
    }
    for (int64_t k = w; k < batches_; k += W) {
      Slot& slot = me.ring[static_cast<size_t>((k / W) % P)];
      {
        std::unique_lock<std::mutex> lock(me.mutex);
        me.changed.wait(lock, [&] { return stopping_ || slot.filled == -1; });
        if (stopping_) return;
      }
      // The slot is free: the consumer does not touch it until it is marked filled.
      slot.error = nullptr;
      try {
        assemble_timed(plan, k, slot);
      } catch (...) {
        slot.error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(me.mutex);
        slot.filled = k;
      }
      me.changed.notify_all();
    }
  }
}

const HostBatch* Loader::next() {
  RT_CHECK(plan_.order, "loader: next() before start_epoch()");
  // Note: the slot handed out last is given back to its worker only now, at the next call: the
  // caller may still be copying out of it (the prefetcher's asynchronous copy reads the pinned
  // slot until wait_for_copies), and a worker refilling it sooner would send the device half
  // of one batch and half of the next.
  if (held_worker_) {
    {
      std::lock_guard<std::mutex> lock(held_worker_->mutex);
      held_->filled = -1;
    }
    held_worker_->changed.notify_all();
    held_ = nullptr;
    held_worker_ = nullptr;
  }
  if (next_batch_ >= batches_) {
    if (!config_.persistent_workers) stop_workers();
    return nullptr;
  }
  const int64_t k = next_batch_++;
  if (config_.workers == 0) {
    assemble_timed(plan_, k, sync_slot_);
    if (trace_clock_) lanes_.front().spans.push_back(sync_slot_.span);
    return &sync_slot_.batch;
  }
  Worker& worker = *workers_[static_cast<size_t>(k % config_.workers)];
  Slot& slot = worker.ring[static_cast<size_t>((k / config_.workers) % config_.prefetch_factor)];
  {
    std::unique_lock<std::mutex> lock(worker.mutex);
    worker.changed.wait(lock, [&] { return slot.filled == k; });
  }
  held_ = &slot;
  held_worker_ = &worker;
  if (slot.error) std::rethrow_exception(slot.error);
  if (trace_clock_) lanes_[static_cast<size_t>(k % config_.workers)].spans.push_back(slot.span);
  return &slot.batch;
}

}  // namespace ringtrain
