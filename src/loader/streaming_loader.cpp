#include "ringtrain/loader/streaming_loader.hpp"

#include <algorithm>

#include "ringtrain/data/hdf5_io.hpp"

namespace ringtrain {
namespace {

// A seed for window w of a run, so windows get different permutations and crops.
uint64_t window_seed(uint64_t seed, int64_t w) {
  return seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(w) * 0xBF58476D1CE4E5B9ull + 1;
}

// Appends each lane of `from` to the lane of the same thread in `into`.
void merge_lanes(std::vector<BatchLane>& into, const std::vector<BatchLane>& from) {
  for (const BatchLane& lane : from) {
    auto same = std::find_if(into.begin(), into.end(),
                             [&](const BatchLane& l) { return l.worker == lane.worker; });
    if (same == into.end()) same = into.insert(into.end(), BatchLane{lane.worker, {}});
    same->spans.insert(same->spans.end(), lane.spans.begin(), lane.spans.end());
  }
}

}  // namespace

StreamingLoader::StreamingLoader(std::string path, std::string split, const Split& meta,
                                 int64_t window_images, const Normalization& norm, DType dtype,
                                 Layout layout, int world_size, int rank,
                                 const LoaderConfig& config, Device& device)
    : path_(std::move(path)),
      split_name_(std::move(split)),
      meta_(meta),
      window_images_(window_images),
      norm_(norm),
      dtype_(dtype),
      layout_(layout),
      world_(world_size),
      rank_(rank),
      config_(config),
      device_(device) {
  RT_CHECK(window_images >= int64_t{config.batch_size} * world_size, "streaming: a window of ",
           window_images, " images cannot hold one batch of ", config.batch_size, " for each of ",
           world_size, " ranks: raise --memory-budget-mb");
  windows_ = (meta.count + window_images - 1) / window_images;
  for (int64_t w = 0; w < windows_; ++w) batches_ += batches_in_window(w);
  RT_CHECK(batches_ > 0, "streaming: no whole batch of ", config.batch_size, " fits the windows");
  window_.height = meta.height;
  window_.width = meta.width;
  window_.channels = meta.channels;
}

int64_t StreamingLoader::window_size(int64_t w) const {
  return std::min(window_images_, meta_.count - w * window_images_);
}

// Note: every rank draws the same window order (one permutation from the shared seed) and the
// same whole number of batches from each window, each from its own shard of it: so all ranks
// enter the same collectives, window after window, without exchanging counts.
int64_t StreamingLoader::batches_in_window(int64_t w) const {
  return window_size(w) / world_ / config_.batch_size;
}

Normalization StreamingLoader::statistics(const std::string& path, const std::string& split,
                                          const Split& meta, int64_t window_images) {
  RT_CHECK(window_images > 0, "streaming: a window must hold at least one image, got ",
           window_images);
  ChannelMoments moments(meta.channels);
  std::vector<uint8_t> buffer;
  for (int64_t first = 0; first < meta.count; first += window_images) {
    const int64_t n = std::min(window_images, meta.count - first);
    buffer.resize(static_cast<size_t>(n * meta.image_bytes()));
    read_hdf5_images(path, split, first, n, buffer.data());
    moments.add(buffer.data(), n * meta.height * meta.width);
  }
  return moments.finish();
}

void StreamingLoader::start_epoch(int64_t epoch) {
  epoch_ = epoch;
  order_ = DistributedSampler(windows_, 1, 0, config_.shuffle, ShardTail::pad, config_.seed)
               .indices_for_epoch(epoch);
  position_ = 0;
  close_window();
}

void StreamingLoader::close_window() {
  if (loader_) merge_lanes(lanes_, loader_->batch_lanes());
  loader_.reset();
}

std::vector<BatchLane> StreamingLoader::batch_lanes() const {
  std::vector<BatchLane> lanes = lanes_;
  if (loader_) merge_lanes(lanes, loader_->batch_lanes());
  return lanes;
}

// Replaces the current window by the next one of the epoch that yields a batch.
// Note: the previous window's Loader and its pinned slots go only here, called from next(), so
// after the copy of the window's last batch (see DevicePrefetcher::next). The window's buffer
// is reused, not doubled, to stay within --memory-budget-mb: reading the next window stalls
// training once per window (no read-ahead).
bool StreamingLoader::open_next_window() {
  close_window();
  transform_.reset();
  window_.images.clear();
  window_.count = 0;
  while (position_ < order_.size()) {
    const int64_t w = order_[position_++];
    const int64_t first = w * window_images_, n = window_size(w);
    if (batches_in_window(w) == 0) continue;
    window_.count = n;
    window_.images.resize(static_cast<size_t>(n * window_.image_bytes()));
    read_hdf5_images(path_, split_name_, first, n, window_.images.data());
    window_.labels.assign(meta_.labels.begin() + first, meta_.labels.begin() + first + n);
    transform_ = std::make_unique<ImageTransform>(window_, norm_, config_.pad, dtype_, layout_);
    LoaderConfig c = config_;
    c.seed = window_seed(config_.seed, w);
    c.drop_last = true;
    loader_ = std::make_unique<Loader>(
        window_, *transform_,
        DistributedSampler(n, world_, rank_, c.shuffle, ShardTail::drop, c.seed), c, device_);
    if (trace_clock_) loader_->trace_batches(*trace_clock_);
    loader_->start_epoch(epoch_);
    return true;
  }
  return false;
}

const HostBatch* StreamingLoader::next() {
  RT_CHECK(!order_.empty(), "streaming: next() before start_epoch()");
  for (;;) {
    if (loader_)
      if (const HostBatch* b = loader_->next()) return b;
    if (!open_next_window()) return nullptr;
  }
}

}  // namespace ringtrain
