// Which GPU each rank of a node drives, and the errors when ranks and GPUs do not match.
#include <gtest/gtest.h>

#include <functional>

#include "ringtrain/core/error.hpp"
#include "ringtrain/distributed/device_assignment.hpp"
#include "test_util.hpp"

namespace ringtrain {
namespace {

using test::error_of;

TEST(DeviceAssignment, LocalRankPicksTheDeviceOrDeviceZeroWhenEachRankSeesOne) {
  EXPECT_EQ(local_device(0, 4, 4), 0);
  EXPECT_EQ(local_device(3, 4, 8), 3);
  EXPECT_EQ(local_device(3, 4, 1), 0);  // srun --gpus-per-task: every rank sees its own device 0
}

TEST(DeviceAssignment, MoreRanksThanDevicesIsAClearError) {
  const std::string e = error_of([] { local_device(2, 4, 2); });
  EXPECT_NE(e.find("4 ranks on this node but only 2 visible CUDA devices"), std::string::npos) << e;
  EXPECT_NE(error_of([] { local_device(0, 1, 0); }).find("no CUDA device visible"),
            std::string::npos);
}

TEST(DeviceAssignment, TwoRanksOnOneGpuAreNamed) {
  EXPECT_EQ(error_of([] { check_distinct_devices({"0000:01:00.0", "0000:02:00.0"}); }), "");
  const std::string e = error_of([] {
    check_distinct_devices({"0000:01:00.0", "0000:02:00.0", "0000:01:00.0"});
  });
  EXPECT_NE(e.find("local ranks 0 and 2 would both drive the GPU at PCI 0000:01:00.0"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace ringtrain
