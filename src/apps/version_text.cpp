#include "version_text.hpp"

#include <fmt/format.h>

#include <vector>

#include "ringtrain/backend/devices.hpp"
#include "ringtrain/core/version.hpp"
#include "ringtrain/distributed/nccl_communicator.hpp"
#include "ringtrain/distributed/world.hpp"

namespace ringtrain::cli {

namespace {

// "built with 9.1.0, runs with 9.1.0"; what runs alone for what is not built against (the
// driver); "not built in" for neither.
std::string describe(const LibraryVersion& l) {
  if (l.built.empty()) return l.runs.empty() ? "not built in" : l.runs;
  return "built with " + l.built + (l.runs.empty() ? "" : ", runs with " + l.runs);
}

}  // namespace

std::string version_text() {
  std::string text = fmt::format("ringtrain {} (git {}, {} build, {})", RINGTRAIN_VERSION,
                                 RINGTRAIN_GIT_COMMIT, RINGTRAIN_BUILD_TYPE, RINGTRAIN_COMPILER);
  std::vector<LibraryVersion> libraries = cuda_library_versions();
  libraries.push_back(nccl_version());
  libraries.push_back(mpi_version());
  libraries.push_back(hdf5_version());
  for (const LibraryVersion& l : libraries)
    text += fmt::format("\n  {:<13} {}", l.name, describe(l));
  return text;
}

}  // namespace ringtrain::cli
