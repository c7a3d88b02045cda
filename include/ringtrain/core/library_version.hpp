#pragma once
// The version of a library ringtrain uses, as built against (its headers) and as running (what
// the loader found), for `ringtrain --version`.
#include <string>

namespace ringtrain {

struct LibraryVersion {
  std::string name;
  std::string built;  // from its headers; "" when not built in
  std::string runs;   // what it reports at run time; "" when it cannot tell
};

// "13.0" from CUDA-style integers (1000 * major + 10 * minor) and the like.
std::string dotted(int major, int minor, int patch = -1);

LibraryVersion hdf5_version();

}  // namespace ringtrain
