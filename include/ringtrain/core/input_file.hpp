#pragma once
// The one check every file the program reads passes first.
#include <sys/types.h>

#include <cstdint>
#include <string>

namespace ringtrain {

// What a path that is not a regular file is ("a FIFO (named pipe)", "a directory", ...).
const char* file_kind(mode_t mode);

// Checks that `path` (symbolic links followed) names a regular file this process may open, and
// returns its size in bytes. Throws an Error "WHAT PATH: is a FIFO (named pipe), not EXPECTED"
// (or "no such file", or the system's reason for an unreadable one). `what` names the command
// or flag ("--init-from"), `expected` the kind of file wanted ("a checkpoint").
int64_t check_input_file(const std::string& path, const std::string& what,
                         const std::string& expected);

}  // namespace ringtrain
