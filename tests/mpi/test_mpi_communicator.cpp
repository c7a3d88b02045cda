// The MPI communicator on random data: sums and averages of odd-sized ranges (bucket
// boundaries inside a larger buffer), broadcast from any root, host scalars, and progress that
// completes an all-reduce before its wait.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <thread>

#include "ringtrain/core/error.hpp"
#include "ringtrain/distributed/mpi_communicator.hpp"
#include "ringtrain/distributed/world.hpp"

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

TEST(MpiCommunicator, ALostPeerTimesOutInsteadOfHanging) {
  World& world = World::get();
  CommOptions o;
  o.timeout_s = 0.5;
  MpiCommunicator comm(world.comm(), o);
  if (comm.rank() == 0) {
    const auto t0 = std::chrono::steady_clock::now();
    try {
      comm.barrier();  // rank 1 arrives only after 5 s
      FAIL() << "barrier completed without rank 1";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("barrier did not complete within 0.5 s on rank 0"),
                std::string::npos)
          << e.what();
      std::string late = "1";  // the sleeping ranks, named from their published arrivals
      for (int r = 2; r < comm.size(); ++r) late += str_cat(", ", r);
      EXPECT_NE(std::string(e.what()).find(
                    str_cat("rank(s) ", late, " never arrived (stuck before collective #0)")),
                std::string::npos)
          << e.what();
    }
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 4.0);
  } else {
    std::this_thread::sleep_for(std::chrono::seconds(5));
  }
  // Everyone meets again (rank 0's abandoned barrier is matched by the others' late one).
  if (comm.rank() != 0) comm.barrier();
  MPI_Barrier(world.comm());
}

TEST(MpiCommunicator, MismatchedCollectivesAreReported) {
  World& world = World::get();
  CommOptions o;
  o.check_collectives = true;
  MpiCommunicator comm(world.comm(), o);
  Tensor t = Tensor::zeros({16}, DType::f32);
  comm.wait(comm.all_reduce_async(t, 0, 16, ReduceOp::sum));  // agreeing: fine
  try {
    comm.all_reduce_async(t, 0, 10 + comm.rank(), ReduceOp::sum);
    FAIL() << "mismatch not reported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("collective mismatch at collective #1"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("disagree on the count (from 10 to "), std::string::npos)
        << e.what();
  }
}

TEST(World, LocalRanksCoverTheNode) {
  World& world = World::get();
  EXPECT_GE(world.local_rank(), 0);
  EXPECT_LT(world.local_rank(), world.local_size());
  EXPECT_LE(world.local_size(), world.size());
}

}  // namespace
}  // namespace ringtrain
