#pragma once
#include <mpi.h>

#include <string>

#include "ringtrain/core/cpus.hpp"
#include "ringtrain/core/library_version.hpp"

namespace ringtrain {

// The MPI world of this job: rank and size, and the rank and size within this node (ranks that
// share memory, from MPI_Comm_split_type), which pick the GPU. Works the same under mpirun,
// srun and a plain start (a world of one).
class World {
 public:
  // Initialises MPI once per process (MPI_THREAD_FUNNELED: only the training thread calls MPI)
  // and finalises it at exit.
  static World& get();

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  MPI_Comm comm() const { return MPI_COMM_WORLD; }
  MPI_Comm local_comm() const { return local_; }  // the ranks of this node
  bool is_root() const { return rank_ == 0; }

  // Ends the whole job: prints "ringtrain: rank R of N: error: message" and calls MPI_Abort, so
  // a failure on one rank never leaves the others waiting in a collective.
  [[noreturn]] void abort(const std::string& message, int code = 1) const;

 private:
  World();
  ~World();
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  MPI_Comm local_ = MPI_COMM_NULL;
};

// The MPI library's own version string (MPI_Get_library_version, callable before MPI_Init), and
// the MPI standard version its headers declare.
LibraryVersion mpi_version();

// This rank's share of its node's cores (cpu_share over the local ranks' affinity masks).
// Collective over the node's ranks.
CpuShare node_cpu_share(const World& world);

// Where the ranks run, for rank 0's log: "4 ranks on 2 nodes: node1 ranks 0-1, node2 ranks 2-3"
// (node names as MPI reports them; nodes in the order of their first rank). Collective.
std::string describe_placement(const World& world);

// This process's rank as mpirun (Open MPI, PMIx, PMI) or srun set it in the environment, known
// before MPI is initialised; 0 when started on its own.
int launch_rank();

// Throws an Error naming the call and the MPI error string when an MPI call fails.
void check_mpi(int code, const char* call);
#define RT_MPI_CHECK(call) ::ringtrain::check_mpi((call), #call)

}  // namespace ringtrain
