#pragma once
#include <cstdint>
#include <vector>

namespace ringtrain {

// What happens to the samples that do not divide evenly among the ranks.
enum class ShardTail {
  pad,     // wrap around so every rank has the same count (training; PyTorch's default)
  drop,    // drop them (PyTorch's drop_last)
  uneven,  // keep them: ranks differ by at most one sample, none counted twice (evaluation)
};

// PyTorch's DistributedSampler: every rank draws the same permutation from (seed, epoch) and
// takes every world-th index starting at its rank.
class DistributedSampler {
 public:
  DistributedSampler(int64_t dataset_size, int world_size, int rank, bool shuffle, ShardTail tail,
                     uint64_t seed);

  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  int64_t per_rank() const { return per_rank_; }
  std::vector<int64_t> indices() const;
  std::vector<int64_t> indices_for_epoch(int64_t epoch) const;

 private:
  int64_t size_;
  int world_, rank_;
  bool shuffle_;
  uint64_t seed_;
  int64_t epoch_ = 0;
  int64_t per_rank_;
};

// An evaluation's shard: in index order, each sample on exactly one rank (ShardTail::uneven),
// so that sums over the ranks are sums over the split. Training's test split and
// `ringtrain eval` both use it.
DistributedSampler evaluation_sampler(int64_t dataset_size, int world_size, int rank);

}  // namespace ringtrain
