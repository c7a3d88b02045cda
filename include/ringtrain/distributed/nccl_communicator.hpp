#pragma once
#include <mpi.h>

#include <memory>

#include "ringtrain/backend/device.hpp"
#include "ringtrain/core/library_version.hpp"
#include "ringtrain/distributed/mpi_communicator.hpp"

namespace ringtrain {

// The id that joins NCCL ranks into one communicator: one rank makes it, every rank is given a
// copy (NCCL's ncclUniqueId, kept opaque so that code built without CUDA can name it).
struct NcclUniqueId {
  char bytes[128];
};
NcclUniqueId make_nccl_unique_id();

// The NCCL this build uses ("" when not built in).
LibraryVersion nccl_version();

// The CUDA backend's communicator: NCCL collectives on device buffers, on a stream of their own
// that waits for the device's compute stream (an event) before each collective, while the
// compute stream waits for the collective's event in wait() (llm.c's pattern). Rank 0 makes the
// NCCL id and MPI broadcasts it. Host scalars, barriers and the --debug-collectives check go
// through MPI. A collective that has not finished after CommOptions::timeout_s aborts the NCCL
// communicator and throws. Throws when ringtrain was built without CUDA.
std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm comm, Device& device,
                                                     const CommOptions& options);

// The same communicator without MPI: rank `rank` of `size`, every rank passing the same `id`.
// Host scalars and barriers are NCCL all-reduces of a small device buffer; the timeout error
// cannot name the ranks that never arrived, and CommOptions::check_collectives (an MPI check)
// is refused. Throws when ringtrain was built without CUDA.
std::unique_ptr<Communicator> make_nccl_communicator(const NcclUniqueId& id, int rank, int size,
                                                     Device& device, const CommOptions& options);

}  // namespace ringtrain
