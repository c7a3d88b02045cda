#pragma once
// Files written so that no reader ever sees one half written, and that never replace what is
// not a file of the user's.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "ringtrain/core/error.hpp"

namespace ringtrain {

// A stream output that nobody reads: a FIFO with no reader when it is opened, or one whose
// reader stopped reading when the run was asked to stop (see set_stream_stop_check). `train`
// goes on without such an output, with a warning; the other commands fail with it.
class UnreadStreamError : public Error {
 public:
  using Error::Error;
};

// What an output's path may name besides a regular file (or nothing yet).
enum class OutputKinds {
  files,              // a regular file only: a checkpoint
  files_and_streams,  // also a FIFO or a character device (/dev/stdout, /dev/null), written through
};

// Checks what stands at `path` before an output is written there, and says whether it is a
// stream to write through. Throws an Error naming the path when it is a directory, a block
// device, a socket, a stream where only files are wanted, or a symbolic link to a regular file
// (name the file itself to replace it). A link under /dev/ or /proc/ (/dev/stdout redirected to
// a file) is a stream.
// `what` starts the error's text ("export: ").
bool is_output_stream(const std::string& path, OutputKinds kinds, const std::string& what = "");

// Writes `image` as the whole of `path`. A regular file (or a new one) is replaced atomically:
// the image goes to a temporary file beside it (TemporaryFile: created exclusively), written
// with checked POSIX writes, fsynced, closed and renamed over `path`, and the folder fsynced; on
// any failure the temporary file is removed. A stream is written through, appended to, as it
// is. Errors read "cannot write PATH: ..." with the call and the system's reason (with the bytes
// needed and free when the disk is full). `progress(bytes written, bytes in all)` is called
// after each 64 MiB written, for the progress lines of large files.
using WriteProgress = std::function<void(std::size_t done, std::size_t total)>;

// Opens the stream `path` (is_output_stream said so) for appending, without waiting for a
// reader: a FIFO that no process reads throws UnreadStreamError at once. Its writes go through
// write_all, which waits for room while the stream is full.
int open_stream(const std::string& path);

// Writes the `size` bytes at `data` to `fd`; returns 0 or the errno of the write that failed,
// and the bytes written in `done`. A full stream is waited on (poll), and given up (ECANCELED)
// once the stop check says the process is stopping; a reader that closed its end gives EPIPE
// (SIGPIPE does not end the process).
int write_all(int fd, const char* data, std::size_t size, const WriteProgress& progress,
              std::size_t& done);

// What a write waiting on a full stream asks, every 200 ms, to know that it should give up:
// `train` installs its stop request (SIGTERM, SIGUSR1), so that a reader that stopped reading
// never keeps it from stopping.
void set_stream_stop_check(bool (*stopping)());

void write_file_atomically(const std::string& path, const std::vector<char>& image,
                           const WriteProgress& progress = {},
                           OutputKinds kinds = OutputKinds::files_and_streams);

}  // namespace ringtrain
