#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ringtrain/loader/loader.hpp"

namespace ringtrain {

// Trains on a split whose images do not fit the memory budget. The split is cut into windows
// of consecutive images (a whole number of HDF5 chunks when the window allows); every epoch
// visits the windows in an order drawn from (seed, epoch), reads one window at a time in the
// calling thread (the only thread that touches HDF5), and runs a Loader over it: the window's
// samples permuted, sharded over the ranks (drop-last) and augmented as in memory. Shuffling is
// thus global across windows and local within one, as chunked streaming loaders do.
class StreamingLoader final : public BatchSource {
 public:
  // `meta` is the split as read_hdf5_dataset left it: labels and dims, no images.
  StreamingLoader(std::string path, std::string split, const Split& meta, int64_t window_images,
                  const Normalization& norm, DType dtype, Layout layout, int world_size, int rank,
                  const LoaderConfig& config, Device& device);

  void start_epoch(int64_t epoch) override;
  const HostBatch* next() override;
  int64_t batches_per_epoch() const override { return batches_; }
  // Every window's Loader traces its batches; a lane holds its worker's batches of all windows.
  void trace_batches(const HostClock& clock) override { trace_clock_ = &clock; }
  std::vector<BatchLane> batch_lanes() const override;
  int64_t windows() const { return windows_; }
  // Images held in memory now (one window at most).
  int64_t resident_images() const { return window_.count; }

  // Per-channel statistics of a split on disk, read window by window.
  static Normalization statistics(const std::string& path, const std::string& split,
                                  const Split& meta, int64_t window_images);

 private:
  int64_t window_size(int64_t w) const;
  int64_t batches_in_window(int64_t w) const;  // this rank's, drop-last
  bool open_next_window();
  void close_window();  // the window's Loader goes; its traced batches stay in lanes_

  std::string path_, split_name_;
  const Split& meta_;
  int64_t window_images_, windows_ = 0, batches_ = 0;
  Normalization norm_;
  DType dtype_;
  Layout layout_;
  int world_, rank_;
  LoaderConfig config_;
  Device& device_;
  int64_t epoch_ = 0;
  std::vector<int64_t> order_;  // window order of this epoch
  size_t position_ = 0;         // next window in order_
  Split window_;
  std::unique_ptr<ImageTransform> transform_;
  std::unique_ptr<Loader> loader_;
  const HostClock* trace_clock_ = nullptr;
  std::vector<BatchLane> lanes_;  // of the windows closed so far
};

}  // namespace ringtrain
