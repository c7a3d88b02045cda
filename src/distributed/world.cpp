#include "ringtrain/distributed/world.hpp"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <vector>

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

LibraryVersion mpi_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  const bool known = MPI_Get_library_version(text, &length) == MPI_SUCCESS;
  std::string runs = known ? std::string(text, static_cast<size_t>(length)) : "";
  runs = runs.substr(0, runs.find_first_of(",\n"));  // Open MPI adds the repository and date
  return {"MPI", str_cat("MPI-", dotted(MPI_VERSION, MPI_SUBVERSION)), runs};
}

CpuShare node_cpu_share(const World& world) {
  std::vector<cpu_set_t> masks(static_cast<size_t>(world.local_size()));
  const cpu_set_t mine = affinity_mask();
  RT_MPI_CHECK(MPI_Allgather(&mine, sizeof mine, MPI_BYTE, masks.data(), sizeof mine, MPI_BYTE,
                             world.local_comm()));
  return cpu_share(masks, world.local_rank());
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

namespace {

// "0-1" for a run of consecutive ranks, "0,2,4" otherwise.
std::string rank_list(const std::vector<int>& ranks) {
  if (ranks.back() - ranks.front() + 1 == static_cast<int>(ranks.size()))
    return ranks.size() == 1 ? std::to_string(ranks[0]) : str_cat(ranks.front(), "-", ranks.back());
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ",") + std::to_string(r);
  return s;
}

}  // namespace

std::string describe_placement(const World& world) {
  char mine[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  RT_MPI_CHECK(MPI_Get_processor_name(mine, &length));
  std::vector<char> all(static_cast<size_t>(MPI_MAX_PROCESSOR_NAME) * world.size());
  RT_MPI_CHECK(MPI_Allgather(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(),
                             MPI_MAX_PROCESSOR_NAME, MPI_CHAR, world.comm()));
  std::vector<std::string> order;
  std::map<std::string, std::vector<int>> ranks;
  for (int r = 0; r < world.size(); ++r) {
    const std::string name(all.data() + static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME);
    if (ranks[name].empty()) order.push_back(name);
    ranks[name].push_back(r);
  }
  std::string s = str_cat(world.size(), world.size() == 1 ? " rank" : " ranks", " on ",
                          order.size(), order.size() == 1 ? " node:" : " nodes:");
  for (size_t i = 0; i < order.size(); ++i)
    s += str_cat(i ? ", " : " ", order[i], ranks[order[i]].size() == 1 ? " rank " : " ranks ",
                 rank_list(ranks[order[i]]));
  return s;
}

}  // namespace ringtrain
