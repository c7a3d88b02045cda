#pragma once
// The temporary file an output is written to before it is renamed into place.
#include <string>

namespace ringtrain {

// A new file beside `target`, named TARGET.tmp-XXXXXX and created exclusively (O_CREAT|O_EXCL:
// never an existing file of the user's, never through a symbolic link planted under its name).
// It is removed by the destructor unless commit() renamed it to `target`, and also when a signal
// whose default action ends the process (SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2,
// SIGPIPE, SIGALRM, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGIO, SIGPWR) ends it while the file
// exists; the process then ends by that signal, as it would have. Only signals whose action is
// still the default are covered: a command that handles one itself, as `train` does SIGTERM and
// SIGUSR1, finishes its write instead.
// Throws an Error naming the call and the system's reason when it cannot be created.
class TemporaryFile {
 public:
  explicit TemporaryFile(std::string target);
  ~TemporaryFile();
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  // fsyncs and closes the file, then renames it to the target; every result checked.
  void commit();

 private:
  std::string target_;
  std::string path_;
  int fd_ = -1;
  bool committed_ = false;
  bool armed_ = false;  // removed at a signal (see arm() in the .cpp)
};

}  // namespace ringtrain
