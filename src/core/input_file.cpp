#include "ringtrain/core/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ringtrain/core/error.hpp"

namespace ringtrain {

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Note: opening a FIFO blocks until a writer appears (HDF5 and std::ifstream both wait forever,
// deaf to SIGTERM), a directory opens as a file of absurd size, a device reads without end. So
// the kind is checked by stat, and readability by an open that cannot block (O_NONBLOCK).
int64_t check_input_file(const std::string& path, const std::string& what,
                         const std::string& expected) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    const int error = errno;
    RT_CHECK(error != ENOENT, what, " ", path, ": no such file");
    throw Error(str_cat(what, " ", path, ": cannot be read: ", std::strerror(error), " (stat)"));
  }
  RT_CHECK(S_ISREG(st.st_mode), what, " ", path, ": is ", file_kind(st.st_mode), ", not ",
           expected);
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  const int error = errno;
  RT_CHECK(fd >= 0, what, " ", path, ": cannot be read: ", std::strerror(error), " (open)");
  RT_CHECK(close(fd) == 0, what, " ", path, ": close failed: ", std::strerror(errno));
  return static_cast<int64_t>(st.st_size);
}

}  // namespace ringtrain
