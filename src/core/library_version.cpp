#include "ringtrain/core/library_version.hpp"

#include <hdf5.h>

#include "ringtrain/core/error.hpp"

namespace ringtrain {

std::string dotted(int major, int minor, int patch) {
  return patch < 0 ? str_cat(major, ".", minor) : str_cat(major, ".", minor, ".", patch);
}

LibraryVersion hdf5_version() {
  unsigned major = 0, minor = 0, release = 0;
  const bool known = H5get_libversion(&major, &minor, &release) >= 0;
  return {"HDF5", dotted(H5_VERS_MAJOR, H5_VERS_MINOR, H5_VERS_RELEASE),
          known ? dotted(int(major), int(minor), int(release)) : ""};
}

}  // namespace ringtrain
