#include "ringtrain/loader/sampler.hpp"

#include <numeric>
#include <random>

#include "ringtrain/core/error.hpp"

namespace ringtrain {

DistributedSampler::DistributedSampler(int64_t dataset_size, int world_size, int rank, bool shuffle,
                                       ShardTail tail, uint64_t seed)
    : size_(dataset_size), world_(world_size), rank_(rank), shuffle_(shuffle), seed_(seed) {
  RT_CHECK(world_size > 0 && rank >= 0 && rank < world_size, "sampler: rank ", rank,
           " outside world of ", world_size);
  RT_CHECK(dataset_size > 0, "sampler: empty dataset");
  switch (tail) {
    case ShardTail::pad:
      per_rank_ = (dataset_size + world_size - 1) / world_size;
      break;
    case ShardTail::drop:
      per_rank_ = dataset_size / world_size;
      break;
    case ShardTail::uneven:
      per_rank_ = (dataset_size - rank + world_size - 1) / world_size;
      break;
  }
  RT_CHECK(per_rank_ > 0, "sampler: ", dataset_size, " samples cannot feed rank ", rank, " of ",
           world_size);
}

std::vector<int64_t> DistributedSampler::indices_for_epoch(int64_t epoch) const {
  DistributedSampler s = *this;
  s.set_epoch(epoch);
  return s.indices();
}

std::vector<int64_t> DistributedSampler::indices() const {
  std::vector<int64_t> order(static_cast<size_t>(size_));
  std::iota(order.begin(), order.end(), 0);
  if (shuffle_) {
    // Fisher-Yates with an explicit generator: the order is the same on every platform.
    std::mt19937_64 rng(seed_ * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(epoch_));
    for (int64_t i = size_ - 1; i > 0; --i) {
      const auto j = static_cast<int64_t>(rng() % static_cast<uint64_t>(i + 1));
      std::swap(order[i], order[j]);
    }
  }
  // Note: rank r takes positions r, r + world, r + 2 world, ... (strided, not a block): after k
  // samples on every rank, the ranks together have consumed exactly the first k x world of the
  // permutation, which lets a checkpoint resume under another world size or batch
  // (resume_position). With ShardTail::pad the last ranks wrap around (% size_) to the first
  // samples, so every rank runs the same number of steps and enters the same collectives.
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(per_rank_));
  for (int64_t k = 0; k < per_rank_; ++k) mine.push_back(order[(k * world_ + rank_) % size_]);
  return mine;
}

DistributedSampler evaluation_sampler(int64_t dataset_size, int world_size, int rank) {
  return DistributedSampler(dataset_size, world_size, rank, false, ShardTail::uneven, 0);
}

}  // namespace ringtrain
