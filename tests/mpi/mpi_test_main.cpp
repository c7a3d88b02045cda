// GoogleTest main for tests run under mpirun: MPI is initialised before the tests, only rank 0
// prints the test listing, and the exit status is the same on every rank.
#include <gtest/gtest.h>

#include "ringtrain/distributed/world.hpp"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ringtrain::World& world = ringtrain::World::get();
  if (!world.is_root()) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int failed = RUN_ALL_TESTS() != 0;
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, world.comm());
  return failed;
}
