#include "ringtrain/core/output_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

#include "ringtrain/core/atomic_file.hpp"
#include "ringtrain/core/error.hpp"

namespace ringtrain {

void create_parent_folder(const std::string& path, const std::string& flag) {
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) return;
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  RT_CHECK(!error, flag, ": cannot create the folder ", dir.string(), " for ", path, ": ",
           error.message(), "; choose a writable path");
}

void check_output_outside(const std::string& out, const std::string& input, const std::string& what,
                          const std::string& input_flag) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::path at = fs::weakly_canonical(fs::absolute(out, error), error);
  if (error) return;  // Note: a path that cannot be resolved is refused when it is written
  for (bool first = true;; first = false) {
    std::error_code differs;  // either path missing: not the same
    RT_CHECK_AS(ConfigError, !fs::equivalent(at, input, differs), what, out,
                first ? " is " : " lies inside ", input, ", which this command reads",
                input_flag.empty() ? "" : " as " + input_flag, ": write the output elsewhere");
    if (at == at.parent_path()) return;
    at = at.parent_path();
  }
}

void check_outputs_apart(const std::vector<FlagPath>& outputs, const std::vector<FlagPath>& inputs,
                         const std::string& what) {
  for (const FlagPath& out : outputs)
    for (const FlagPath& in : inputs)
      if (!out.path.empty() && !in.path.empty())
        check_output_outside(out.path, in.path, str_cat(what, out.flag, " "), in.flag);
}

OutputStream::OutputStream(std::string path, std::string flag, bool append)
    : path_(std::move(path)), flag_(std::move(flag)) {
  create_parent_folder(path_, flag_);
  if (is_output_stream(path_, OutputKinds::files_and_streams, flag_ + ": ")) {
    try {
      fd_ = open_stream(path_);
    } catch (const UnreadStreamError& e) {
      throw UnreadStreamError(str_cat(flag_, ": ", e.what()));
    }
    return;
  }
  const int mode = append ? O_APPEND : O_TRUNC;
  fd_ = open(path_.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | mode, 0644);
  RT_CHECK(fd_ >= 0, flag_, ": cannot open ", path_, " for writing: ", std::strerror(errno),
           "; choose a writable path");
}

OutputStream::~OutputStream() {
  if (fd_ >= 0) ::close(fd_);
}

OutputStream::OutputStream(OutputStream&& other) noexcept
    : path_(std::move(other.path_)), flag_(std::move(other.flag_)), fd_(other.fd_) {
  other.fd_ = -1;
}

OutputStream& OutputStream::operator=(OutputStream&& other) noexcept {
  std::swap(path_, other.path_);
  std::swap(flag_, other.flag_);
  std::swap(fd_, other.fd_);
  return *this;
}

void OutputStream::write(const std::string& text) {
  size_t done = 0;
  const int code = write_all(fd_, text.data(), text.size(), {}, done);
  RT_CHECK_AS(UnreadStreamError, code != ECANCELED, flag_, ": ", path_,
              " takes no more (its reader stopped reading) and the process is stopping");
  RT_CHECK(code == 0, flag_, ": writing ", path_, " failed: ", std::strerror(code),
           "; check the free space there");
}

void OutputStream::close() {
  if (fd_ < 0) return;
  const int closed = ::close(fd_);
  fd_ = -1;
  RT_CHECK(closed == 0, flag_, ": close of ", path_, " failed: ", std::strerror(errno));
}

void write_text_file(const std::string& path, const std::string& text, const std::string& flag) {
  create_parent_folder(path, flag);
  try {
    write_file_atomically(path, std::vector<char>(text.begin(), text.end()));
  } catch (const UnreadStreamError& e) {
    throw UnreadStreamError(str_cat(flag, ": ", e.what()));
  } catch (const Error& e) {
    throw Error(str_cat(flag, ": ", e.what()));
  }
}

}  // namespace ringtrain
