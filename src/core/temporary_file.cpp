#include "ringtrain/core/temporary_file.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <random>

#include "ringtrain/core/error.hpp"

namespace ringtrain {
namespace {

// Note: a signal handler may only call async-signal-safe functions, so the path to remove lives
// in a fixed buffer, published through an atomic flag. One temporary file is covered at a time
// (outputs are written one after the other); a second one is still removed on every error path,
// only not at a signal. The handlers are in place before the file is created, and the creating
// thread blocks the signals until its name is published; a handler run by another thread
// meanwhile waits for the name (g_creating), so no moment leaves the file behind.
// Every signal whose default action ends the process, but those a fault raises (SIGSEGV, SIGBUS,
// SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS: the state then is not trusted).
constexpr int kSignals[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGTERM,   SIGUSR1, SIGUSR2, SIGPIPE,
                            SIGALRM, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGIO,   SIGPWR};
constexpr int kCount = sizeof(kSignals) / sizeof(kSignals[0]);
char g_path[PATH_MAX];
std::atomic<bool> g_armed{false};
std::atomic<bool> g_creating{false};
std::atomic<bool> g_slot_taken{false};
struct sigaction g_previous[kCount];
bool g_installed[kCount];

void remove_and_die(int signal) {
  while (g_creating.load()) {
  }
  if (g_armed.load()) unlink(g_path);
  std::signal(signal, SIG_DFL);
  raise(signal);
}

// Installs the handlers for a file about to be created beside `target`; false when another file
// is covered already, or the name would not fit.
bool take_slot(const std::string& target) {
  if (target.size() + 16 >= sizeof(g_path) || g_slot_taken.exchange(true)) return false;
  for (int i = 0; i < kCount; ++i) {
    struct sigaction action {};
    action.sa_handler = remove_and_die;
    sigemptyset(&action.sa_mask);
    g_installed[i] = sigaction(kSignals[i], nullptr, &g_previous[i]) == 0 &&
                     g_previous[i].sa_handler == SIG_DFL &&
                     sigaction(kSignals[i], &action, nullptr) == 0;
  }
  return true;
}

void disarm() {
  for (int i = 0; i < kCount; ++i)
    if (g_installed[i]) sigaction(kSignals[i], &g_previous[i], nullptr);
  g_armed.store(false);
  g_slot_taken.store(false);
}

// The covered signals blocked in this thread while it lives (a pending one is delivered after),
// and, for the slot's owner, its handlers in other threads held back (g_creating).
class SignalsBlocked {
 public:
  explicit SignalsBlocked(bool creating) : creating_(creating) {
    sigset_t set;
    sigemptyset(&set);
    for (const int signal : kSignals) sigaddset(&set, signal);
    pthread_sigmask(SIG_BLOCK, &set, &previous_);
    if (creating_) g_creating.store(true);
  }
  ~SignalsBlocked() {
    if (creating_) g_creating.store(false);
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  SignalsBlocked(const SignalsBlocked&) = delete;
  SignalsBlocked& operator=(const SignalsBlocked&) = delete;

 private:
  bool creating_;
  sigset_t previous_{};
};

std::string random_suffix() {
  static std::atomic<unsigned> counter{0};
  std::random_device device;
  char text[16];
  std::snprintf(text, sizeof(text), "%06x", (device() ^ (counter++ << 20)) & 0xffffff);
  return text;
}

// Creates `path` exclusively and locks it; -1 with errno set when it cannot (EEXIST: try another
// name).
// Note: the lock tells a starting run's clean-up (prepare_checkpoint_dir) that a live process
// writes this file. The clean-up removes a temporary only while it holds the lock itself, so a
// file removed between our open and our lock has no link left, and we start over under a new
// name. Where the file system has no flock the file is written unlocked, as before.
int create_locked(const std::string& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  struct stat st {};
  if (fd >= 0 && flock(fd, LOCK_EX) == 0 && fstat(fd, &st) == 0 && st.st_nlink == 0) {
    close(fd);  // an unlinked file we never wrote: nothing to lose
    errno = EEXIST;
    return -1;
  }
  return fd;
}

}  // namespace

TemporaryFile::TemporaryFile(std::string target) : target_(std::move(target)) {
  armed_ = take_slot(target_);
  int error = EEXIST;
  {
    const SignalsBlocked blocked(armed_);
    for (int attempt = 0; attempt < 100 && fd_ < 0 && error == EEXIST; ++attempt) {
      path_ = target_ + ".tmp-" + random_suffix();
      fd_ = create_locked(path_);
      error = errno;
    }
    if (armed_ && fd_ >= 0) {
      std::memcpy(g_path, path_.c_str(), path_.size() + 1);
      g_armed.store(true);
    }
  }
  if (fd_ < 0 && armed_) disarm();
  armed_ = armed_ && fd_ >= 0;
  RT_CHECK(fd_ >= 0, "creating the temporary file ", path_, " failed: ", std::strerror(error));
}

TemporaryFile::~TemporaryFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) unlink(path_.c_str());
  if (armed_) disarm();
}

void TemporaryFile::commit() {
  RT_CHECK(fsync(fd_) == 0, "fsync of ", path_, " failed: ", std::strerror(errno));
  const int closed = ::close(fd_);
  fd_ = -1;
  RT_CHECK(closed == 0, "close of ", path_, " failed: ", std::strerror(errno));
  RT_CHECK(std::rename(path_.c_str(), target_.c_str()) == 0, "rename of ", path_, " to ", target_,
           " failed: ", std::strerror(errno));
  committed_ = true;
}

}  // namespace ringtrain
