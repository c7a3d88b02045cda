#pragma once
// Files written so that no reader ever sees one half written.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace ringtrain {

// Writes `image` to PATH.tmp with checked POSIX writes, fsyncs and closes it, renames it to
// `path` and fsyncs the folder. On any failure the temporary file is removed and an Error
// "cannot write PATH: ..." names the call and the system's reason (with the bytes needed and
// free when the disk is full). `progress(bytes written, bytes in all)` is called after each
// 64 MiB written, for the progress lines of large files.
using WriteProgress = std::function<void(std::size_t done, std::size_t total)>;
void write_file_atomically(const std::string& path, const std::vector<char>& image,
                           const WriteProgress& progress = {});

}  // namespace ringtrain
