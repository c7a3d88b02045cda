// A rank's share of its node's cores, from the local ranks' affinity masks.
#include <gtest/gtest.h>
#include <sched.h>

#include <vector>

#include "ringtrain/core/cpus.hpp"

namespace ringtrain {
namespace {

cpu_set_t cores(int first, int last) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  for (int c = first; c <= last; ++c) CPU_SET(c, &mask);
  return mask;
}

TEST(CpuShare, UnboundRanksDivideTheCoresTheyShare) {
  const std::vector<cpu_set_t> masks(3, cores(0, 7));  // mpirun --bind-to none
  const CpuShare s = cpu_share(masks, 1);
  EXPECT_EQ(s.affinity_cores, 8);
  EXPECT_EQ(s.sharing_ranks, 3);
  EXPECT_EQ(s.cores, 2);
}

TEST(CpuShare, RanksBoundToTheirOwnCoresKeepThemAll) {
  const std::vector<cpu_set_t> masks = {cores(0, 3), cores(4, 7)};  // --bind-to socket, 2 sockets
  const CpuShare s = cpu_share(masks, 1);
  EXPECT_EQ(s.sharing_ranks, 1);
  EXPECT_EQ(s.cores, 4);
}

TEST(CpuShare, RanksSharingASocketSplitIt) {
  const std::vector<cpu_set_t> masks = {cores(0, 3), cores(0, 3), cores(4, 7), cores(4, 7)};
  EXPECT_EQ(cpu_share(masks, 0).cores, 2);
  EXPECT_EQ(cpu_share(masks, 3).sharing_ranks, 2);
}

TEST(CpuShare, MoreRanksThanCoresStillGetOneThread) {
  const std::vector<cpu_set_t> masks(4, cores(0, 1));
  EXPECT_EQ(cpu_share(masks, 2).cores, 1);
}

TEST(CpuShare, AffinityCoresCountsThisProcesssMask) {
  cpu_set_t mask;
  ASSERT_EQ(sched_getaffinity(0, sizeof mask, &mask), 0);
  EXPECT_EQ(affinity_cores(), CPU_COUNT(&mask));
}

}  // namespace
}  // namespace ringtrain
