// Built without the CUDA backend there is no NCCL: asking for its communicator is an error.
#include "ringtrain/dist/nccl_communicator.hpp"

namespace ringtrain {

std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm, Device&, const CommOptions&) {
  throw Error("the NCCL communicator is not built into this ringtrain (no CUDA backend)");
}

}  // namespace ringtrain
