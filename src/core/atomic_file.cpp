#include "ringtrain/core/atomic_file.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>

#include "ringtrain/core/error.hpp"
#include "ringtrain/core/input_file.hpp"
#include "ringtrain/core/temporary_file.hpp"

namespace ringtrain {
namespace {

std::string errno_text(int code) {
  return std::strerror(code);
}

// Flushes a folder to the disk.
void fsync_path(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
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

std::atomic<bool (*)()> g_stopping{nullptr};

// Waits until `fd` takes more bytes; false when the process is stopping first.
bool wait_for_room(int fd) {
  for (;;) {
    bool (*stopping)() = g_stopping.load();
    if (stopping && stopping()) return false;
    pollfd p{fd, POLLOUT, 0};
    const int n = poll(&p, 1, 200);
    if (n > 0 || (n < 0 && errno != EINTR)) return true;  // the next write says what is wrong
  }
}

// Note: write() to a FIFO whose reader closed its end raises SIGPIPE, whose default action ends
// the process (a training run without its checkpoint). The signal is blocked in this thread
// while writing, and the one a failed write raised is taken back, so the write fails with EPIPE.
class SigpipeBlocked {
 public:
  SigpipeBlocked() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &previous_);
  }
  ~SigpipeBlocked() {
    const timespec now{};
    if (broken) sigtimedwait(&pipe_, nullptr, &now);
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  SigpipeBlocked(const SigpipeBlocked&) = delete;
  SigpipeBlocked& operator=(const SigpipeBlocked&) = delete;
  bool broken = false;

 private:
  sigset_t pipe_{};
  sigset_t previous_{};
};

// A regular file's replacement: a temporary file, written whole, renamed over `path`.
void replace_file(const std::string& path, const std::vector<char>& image,
                  const WriteProgress& progress) {
  const auto parent = std::filesystem::path(path).parent_path();
  const std::string dir = parent.empty() ? "." : parent.string();
  TemporaryFile tmp(path);
  size_t done = 0;
  const int code = write_all(tmp.fd(), image.data(), image.size(), progress, done);
  if (code != 0) unlink(tmp.path().c_str());  // before space_note measures what is free
  RT_CHECK(code == 0, "write of ", tmp.path(), " failed after ", done, " of ", image.size(),
           " bytes: ", errno_text(code), space_note(code, dir, image.size()));
  tmp.commit();
  fsync_path(dir);
}

// A stream's write: opened as it is (no temporary file, no rename), appended to.
void write_through(const std::string& path, const std::vector<char>& image,
                   const WriteProgress& progress) {
  const int fd = open_stream(path);
  size_t done = 0;
  const int code = write_all(fd, image.data(), image.size(), progress, done);
  const int closed = ::close(fd);
  RT_CHECK_AS(UnreadStreamError, code != ECANCELED, path,
              " takes no more (its reader stopped reading) and the process is stopping: ",
              image.size() - done, " bytes not written");
  RT_CHECK(code == 0, "write of ", path, " failed after ", done, " of ", image.size(),
           " bytes: ", errno_text(code));
  RT_CHECK(closed == 0, "close of ", path, " failed: ", errno_text(errno));
}

bool system_name(const std::string& path) {
  return path.rfind("/dev/", 0) == 0 || path.rfind("/proc/", 0) == 0;
}

}  // namespace

int open_stream(const std::string& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
  RT_CHECK_AS(UnreadStreamError, fd >= 0 || errno != ENXIO, path,
              " is a FIFO that no process reads: start its reader first, or name a file");
  RT_CHECK(fd >= 0, "open of ", path, " for writing failed: ", errno_text(errno));
  return fd;
}

int write_all(int fd, const char* data, size_t size, const WriteProgress& progress, size_t& done) {
  SigpipeBlocked blocked;
  done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, data + done, std::min(size - done, kProgressBytes));
    const int code = n < 0 ? errno : 0;
    if (code == EINTR) continue;
    if (code == EAGAIN) {
      if (wait_for_room(fd)) continue;
      return ECANCELED;
    }
    blocked.broken = code == EPIPE;
    if (code != 0) return code;
    if (n == 0) return ENOSPC;  // Note: a regular file's write returns 0 only when it cannot grow
    done += static_cast<size_t>(n);
    if (progress) progress(done, size);
  }
  return 0;
}

void set_stream_stop_check(bool (*stopping)()) {
  g_stopping.store(stopping);
}

bool is_output_stream(const std::string& path, OutputKinds kinds, const std::string& what) {
  struct stat link {};
  if (lstat(path.c_str(), &link) != 0) {
    RT_CHECK(errno == ENOENT, what, path, ": cannot be examined: ", errno_text(errno), " (lstat)");
    return false;
  }
  if (S_ISREG(link.st_mode)) return false;
  const bool is_link = S_ISLNK(link.st_mode);
  struct stat target = link;
  RT_CHECK(!is_link || stat(path.c_str(), &target) == 0, what, path,
           " is a symbolic link to a missing file: name the file to write itself");
  const bool stream = S_ISFIFO(target.st_mode) || S_ISCHR(target.st_mode);
  const bool redirected = is_link && S_ISREG(target.st_mode) && system_name(path);
  if (kinds == OutputKinds::files_and_streams && (stream || redirected)) return true;
  RT_CHECK(!(is_link && S_ISREG(target.st_mode)), what, path, " is a symbolic link to ",
           std::filesystem::canonical(path).string(),
           ": name that file itself to replace it (a link is not replaced)");
  throw Error(str_cat(what, path, " is ", file_kind(target.st_mode), ": it is not replaced; ",
                      kinds == OutputKinds::files ? "name a file" : "name a file or a stream"));
}

void write_file_atomically(const std::string& path, const std::vector<char>& image,
                           const WriteProgress& progress, OutputKinds kinds) {
  try {
    if (is_output_stream(path, kinds))
      write_through(path, image, progress);
    else
      replace_file(path, image, progress);
  } catch (const UnreadStreamError& e) {
    throw UnreadStreamError(str_cat("cannot write ", path, ": ", e.what()));
  } catch (const Error& e) {
    throw Error(str_cat("cannot write ", path, ": ", e.what()));
  }
}

}  // namespace ringtrain
