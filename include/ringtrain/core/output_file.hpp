#pragma once
// The files a command writes for the user (the run summary, metrics, traces, --out reports):
// their folder is created first, and every failure names the flag, the file, the system's
// reason and the remedy.
#include <string>
#include <vector>

namespace ringtrain {

// Creates the folders above `path` (nothing when it names none). `flag` names the file to the
// user, e.g. "--summary".
void create_parent_folder(const std::string& path, const std::string& flag);

// Throws a ConfigError (a usage error) when `out` is `input` or lies inside it (a folder), by
// filesystem identity: a link, a hard link or another spelling of the same path is caught. `what`
// starts the message ("data import-images: "); `input_flag`, when given, names the input.
void check_output_outside(const std::string& out, const std::string& input, const std::string& what,
                          const std::string& input_flag = "");

// A file a command reads or writes, with the flag that names it ("--data").
struct FlagPath {
  std::string flag;
  std::string path;  // "" when the flag is not given: skipped
};

// Throws a ConfigError (a usage error) when one of a command's `outputs` is one of its `inputs`
// or lies inside one (a folder), by filesystem identity as check_output_outside: no command
// writes over what it reads. `what` starts the message ("eval: ").
void check_outputs_apart(const std::vector<FlagPath>& outputs, const std::vector<FlagPath>& inputs,
                         const std::string& what);

// An output written a piece at a time for the length of a run (--metrics): a regular file,
// truncated or appended to, or a stream (a FIFO, /dev/stdout) written through. What `path`
// names is checked as write_file_atomically checks it (a symbolic link to a file is refused),
// its folder created first; a FIFO that no process reads throws UnreadStreamError at once, and
// a full one is waited on as write_all waits.
class OutputStream {
 public:
  OutputStream() = default;
  OutputStream(std::string path, std::string flag, bool append);
  ~OutputStream();
  OutputStream(OutputStream&& other) noexcept;
  OutputStream& operator=(OutputStream&& other) noexcept;

  bool is_open() const { return fd_ >= 0; }
  // Writes `text` whole; throws naming the flag, the file and the system's reason.
  void write(const std::string& text);
  // Closes it (checked); the destructor closes it unchecked.
  void close();

 private:
  std::string path_;
  std::string flag_;
  int fd_ = -1;
};

// Writes `text` as the whole of `path`, atomically (a reader sees the old file or the new one),
// its folder created first.
void write_text_file(const std::string& path, const std::string& text, const std::string& flag);

}  // namespace ringtrain
