#include "ringtrain/core/atomic_file.hpp"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

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

constexpr size_t kProgressBytes = size_t{64} << 20;

// Writes `image` to a new file `tmp`, fsynced and closed, every result checked.
void write_file(const std::string& tmp, const std::string& dir, const std::vector<char>& image,
                const WriteProgress& progress) {
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  RT_CHECK(fd >= 0, "open of ", tmp, " for writing failed: ", errno_text(errno));
  size_t done = 0;
  int code = 0;
  while (done < image.size() && code == 0) {
    const ssize_t n =
        ::write(fd, image.data() + done, std::min(image.size() - done, kProgressBytes));
    if (n > 0) done += static_cast<size_t>(n);
    if (n > 0 && progress) progress(done, image.size());
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

}  // namespace

void write_file_atomically(const std::string& path, const std::vector<char>& image,
                           const WriteProgress& progress) {
  const std::string tmp = path + ".tmp";
  const auto parent = std::filesystem::path(path).parent_path();
  const std::string dir = parent.empty() ? "." : parent.string();
  try {
    write_file(tmp, dir, image, progress);
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
