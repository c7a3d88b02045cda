// Built without the CUDA backend there is no NCCL: asking for its communicator is an error.
#include "ringtrain/distributed/nccl_communicator.hpp"

namespace ringtrain {

namespace {
[[noreturn]] void no_nccl() {
  throw Error("the NCCL communicator is not built into this ringtrain (no CUDA backend)");
}
}  // namespace

LibraryVersion nccl_version() {
  return {"NCCL", "", ""};
}

NcclUniqueId make_nccl_unique_id() {
  no_nccl();
}

std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm, Device&, const CommOptions&) {
  no_nccl();
}

std::unique_ptr<Communicator> make_nccl_communicator(const NcclUniqueId&, int, int, Device&,
                                                     const CommOptions&) {
  no_nccl();
}

}  // namespace ringtrain
