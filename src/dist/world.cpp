#include "ringtrain/dist/world.hpp"

#include <cstdio>
#include <cstdlib>

#include "ringtrain/core/error.hpp"

namespace ringtrain {

void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  throw Error(str_cat(call, " failed on rank ", rank, ": ", std::string(text, length)));
}

int launch_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (const char* value = std::getenv(name)) return std::atoi(value);
  return 0;
}

World& World::get() {
  static World world;
  return world;
}

World::World() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    RT_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided));
    RT_CHECK(provided >= MPI_THREAD_FUNNELED, "MPI_Init_thread: need MPI_THREAD_FUNNELED, got ",
             provided);
  }
  // Errors come back as codes and become exceptions (RT_MPI_CHECK) instead of MPI's own abort.
  RT_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  RT_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  RT_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  RT_MPI_CHECK(
      MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local_));
  RT_MPI_CHECK(MPI_Comm_rank(local_, &local_rank_));
  RT_MPI_CHECK(MPI_Comm_size(local_, &local_size_));
}

World::~World() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (local_ != MPI_COMM_NULL) MPI_Comm_free(&local_);
  MPI_Finalize();
}

void World::abort(const std::string& message, int code) const {
  std::fprintf(stderr, "ringtrain: rank %d of %d: error: %s\n", rank_, size_, message.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::abort();
}

}  // namespace ringtrain
