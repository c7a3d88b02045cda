// The MPI communicator on random data: sums and averages of odd-sized ranges (bucket
// boundaries inside a larger buffer), broadcast from any root, host scalars, and progress that
// completes an all-reduce before its wait.
#include <gtest/gtest.h>

#include <random>

#include "ringtrain/dist/mpi_communicator.hpp"
#include "ringtrain/dist/world.hpp"

namespace ringtrain {
namespace {

std::vector<float> rank_data(int rank, int64_t n) {
  std::mt19937_64 rng(1000 + rank);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(rng);
  return v;
}

TEST(MpiCommunicator, AllReducesRangesInPlace) {
  World& world = World::get();
  MpiCommunicator comm(world.comm());
  const int64_t n = 1237;
  const std::vector<float> mine = rank_data(comm.rank(), n);
  Tensor buffer = Tensor::zeros({n}, DType::f32);
  std::copy(mine.begin(), mine.end(), buffer.data<float>());
  // Three buckets with odd boundaries, started together, waited in reverse; one range untouched.
  const int64_t bounds[] = {0, 1, 500, 1200};
  std::vector<CommHandle> handles;
  for (int b = 0; b < 3; ++b)
    handles.push_back(comm.all_reduce_async(buffer, bounds[b], bounds[b + 1] - bounds[b],
                                            b == 1 ? ReduceOp::average : ReduceOp::sum));
  for (int b = 2; b >= 0; --b) comm.wait(handles[static_cast<size_t>(b)]);

  std::vector<double> sum(static_cast<size_t>(n), 0.0);
  for (int r = 0; r < comm.size(); ++r) {
    const auto other = rank_data(r, n);
    for (int64_t i = 0; i < n; ++i) sum[i] += other[i];
  }
  for (int64_t i = 0; i < n; ++i) {
    const float got = buffer.data<float>()[i];
    if (i >= 1200) {
      ASSERT_EQ(got, mine[i]) << i;
    } else if (i >= 1 && i < 500) {
      ASSERT_NEAR(got, sum[i] / comm.size(), 1e-5) << i;
    } else {
      ASSERT_NEAR(got, sum[i], 1e-5) << i;
    }
  }
}

TEST(MpiCommunicator, BroadcastsFromAnyRoot) {
  World& world = World::get();
  MpiCommunicator comm(world.comm());
  for (int root : {0, comm.size() - 1}) {
    Tensor t = Tensor::zeros({17}, DType::f64);
    for (int i = 0; i < 17; ++i) t.data<double>()[i] = comm.rank() * 100 + i;
    comm.broadcast(t, root);
    for (int i = 0; i < 17; ++i) ASSERT_EQ(t.data<double>()[i], root * 100 + i);
  }
  comm.barrier();
}

TEST(MpiCommunicator, HostScalars) {
  World& world = World::get();
  MpiCommunicator comm(world.comm());
  double v[2] = {1.0, static_cast<double>(comm.rank())};
  comm.all_reduce_host(v, 2, ReduceOp::sum);
  EXPECT_EQ(v[0], comm.size());
  EXPECT_EQ(v[1], comm.size() * (comm.size() - 1) / 2.0);
}

TEST(MpiCommunicator, ProgressCompletesBeforeWait) {
  World& world = World::get();
  MpiCommunicator comm(world.comm());
  Tensor t = Tensor::zeros({64}, DType::f32);
  const CommHandle h = comm.all_reduce_async(t, 0, 64, ReduceOp::sum);
  for (int i = 0; i < 100000 && comm.completed_before_wait() == 0; ++i) comm.progress();
  EXPECT_EQ(comm.completed_before_wait(), 1);
  comm.wait(h);
}

TEST(World, LocalRanksCoverTheNode) {
  World& world = World::get();
  EXPECT_GE(world.local_rank(), 0);
  EXPECT_LT(world.local_rank(), world.local_size());
  EXPECT_LE(world.local_size(), world.size());
}

}  // namespace
}  // namespace ringtrain
