#include "ringtrain/core/hdf5_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "ringtrain/core/error.hpp"

namespace ringtrain {
namespace {

// Flushes a file or a folder to the disk.
void fsync_path(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY);
  RT_CHECK(fd >= 0, "cannot open ", path, " to sync it");
  const int status = fsync(fd);
  close(fd);
  RT_CHECK(status == 0, "fsync of ", path, " failed");
}

}  // namespace

void silence_hdf5() {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

void write_hdf5_atomically(const std::string& path, const std::function<void(hid_t file)>& fill) {
  silence_hdf5();
  const std::string tmp = path + ".tmp";
  try {
    {
      Hdf5Handle file(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
      RT_CHECK(file.ok(), "cannot create ", tmp);
      fill(file.get());
    }
    fsync_path(tmp);
    std::filesystem::rename(tmp, path);
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  const auto dir = std::filesystem::path(path).parent_path();
  fsync_path(dir.empty() ? "." : dir.string());
}

}  // namespace ringtrain
