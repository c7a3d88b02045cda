#include "ringtrain/core/hdf5_file.hpp"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "ringtrain/core/error.hpp"

namespace ringtrain {
namespace {

std::string errno_text(int code) {
  return std::strerror(code);
}

// Flushes a file or a folder to the disk.
void fsync_path(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY);
  RT_CHECK(fd >= 0, "open of ", path, " (to fsync it) failed: ", errno_text(errno));
  const int status = fsync(fd);
  const int fsync_errno = errno;
  const int closed = ::close(fd);
  RT_CHECK(status == 0, "fsync of ", path, " failed: ", errno_text(fsync_errno));
  RT_CHECK(closed == 0, "close of ", path, " failed: ", errno_text(errno));
}

// " (DIR has F bytes free, the file needs N)" when the disk is full.
std::string space_note(int code, const std::string& dir, size_t needed) {
  struct statvfs s {};
  if ((code != ENOSPC && code != EDQUOT) || statvfs(dir.c_str(), &s) != 0) return "";
  return str_cat(" (", dir, " has ", static_cast<uint64_t>(s.f_bavail) * s.f_frsize,
                 " bytes free, the file needs ", needed, "; free space there or write elsewhere)");
}

// Writes `image` to a new file `tmp`, fsynced and closed, every result checked.
void write_file(const std::string& tmp, const std::string& dir, const std::vector<char>& image) {
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  RT_CHECK(fd >= 0, "open of ", tmp, " for writing failed: ", errno_text(errno));
  size_t done = 0;
  int code = 0;
  while (done < image.size() && code == 0) {
    const ssize_t n = ::write(fd, image.data() + done, image.size() - done);
    if (n > 0) done += static_cast<size_t>(n);
    if (n < 0 && errno != EINTR) code = errno;
    if (n == 0) code = ENOSPC;  // Note: a regular file's write returns 0 only when it cannot grow
  }
  if (code == 0 && fsync(fd) != 0) code = errno;
  const int closed = ::close(fd);
  if (code != 0) std::remove(tmp.c_str());  // before space_note measures what is free
  RT_CHECK(code == 0, "write of ", tmp, " failed after ", done, " of ", image.size(),
           " bytes: ", errno_text(code), space_note(code, dir, image.size()));
  RT_CHECK(closed == 0, "close of ", tmp, " failed: ", errno_text(errno));
}

// The file `fill` makes, built in memory: HDF5 never writes to the disk, so a full disk cannot
// fail one of its calls halfway (a failed H5Fclose leaves a half-closed file that crashes
// HDF5's clean-up at exit).
std::vector<char> build_image(const std::string& path,
                              const std::function<void(hid_t file)>& fill) {
  Hdf5Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  hdf5_check(fapl.get(), "H5Pcreate(H5P_FILE_ACCESS)");
  hdf5_check(H5Pset_fapl_core(fapl.get(), size_t{1} << 20, false), "H5Pset_fapl_core");
  Hdf5Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), H5Fclose);
  hdf5_check(file.get(), str_cat("H5Fcreate of ", path, " in memory"));
  fill(file.get());
  hdf5_check(H5Fflush(file.get(), H5F_SCOPE_GLOBAL), str_cat("H5Fflush of ", path));
  const ssize_t size = H5Fget_file_image(file.get(), nullptr, 0);
  hdf5_check(size, str_cat("H5Fget_file_image of ", path));
  std::vector<char> image(static_cast<size_t>(size));
  hdf5_check(H5Fget_file_image(file.get(), image.data(), image.size()),
             str_cat("H5Fget_file_image of ", path));
  file.close(str_cat("H5Fclose of ", path));
  return image;
}

struct StackWalk {
  std::string innermost, system;
};

herr_t visit_error(unsigned n, const H5E_error2_t* e, void* data) {
  auto* walk = static_cast<StackWalk*>(data);
  const std::string desc = e->desc ? e->desc : "";
  if (n == 0) walk->innermost = desc;
  int code = 0;
  const size_t at = desc.find("errno = ");
  if (walk->system.empty() && at != std::string::npos &&
      std::sscanf(desc.c_str() + at, "errno = %d", &code) == 1 && code > 0)
    walk->system = errno_text(code);
  return 0;
}

}  // namespace

void Hdf5Handle::close(const std::string& what) {
  const hid_t id = id_;
  id_ = -1;  // Note: the destructor must not retry a close that failed
  hdf5_check(close_(id), what);
}

void silence_hdf5() {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

std::string hdf5_error_text() {
  StackWalk walk;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, visit_error, &walk);
  if (!walk.system.empty()) return walk.system;
  return walk.innermost.empty() ? "HDF5 gave no reason" : walk.innermost;
}

void hdf5_check(int64_t status, const std::string& what) {
  if (status < 0) throw Error(str_cat(what, ": ", hdf5_error_text()));
}

void write_hdf5_atomically(const std::string& path, const std::function<void(hid_t file)>& fill) {
  silence_hdf5();
  const std::string tmp = path + ".tmp";
  const auto parent = std::filesystem::path(path).parent_path();
  const std::string dir = parent.empty() ? "." : parent.string();
  try {
    write_file(tmp, dir, build_image(path, fill));
    RT_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, "rename of ", tmp, " to ", path,
             " failed: ", errno_text(errno));
    fsync_path(dir);
  } catch (const Error& e) {
    std::remove(tmp.c_str());
    throw Error(str_cat("cannot write ", path, ": ", e.what()));
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
}

}  // namespace ringtrain
