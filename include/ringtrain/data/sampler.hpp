#pragma once
#include <cstdint>
#include <vector>

namespace ringtrain {

// PyTorch's DistributedSampler: every rank draws the same permutation from (seed, epoch), pads
// it by wrapping around to a multiple of the world size (or drops the tail with drop_last),
// and takes every world-th index starting at its rank.
class DistributedSampler {
 public:
  DistributedSampler(int64_t dataset_size, int world_size, int rank, bool shuffle, bool drop_last,
                     uint64_t seed);

  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  int64_t epoch() const { return epoch_; }
  int64_t per_rank() const { return per_rank_; }
  std::vector<int64_t> indices() const;

 private:
  int64_t size_;
  int world_, rank_;
  bool shuffle_;
  uint64_t seed_;
  int64_t epoch_ = 0;
  int64_t per_rank_;
};

}  // namespace ringtrain
