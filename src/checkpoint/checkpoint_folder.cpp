#include "ringtrain/checkpoint/checkpoint_folder.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "ringtrain/checkpoint/resume_position.hpp"
#include "ringtrain/core/error.hpp"

namespace ringtrain {
namespace {

namespace fs = std::filesystem;

// Whether `name` is ckpt-stepNNNNNNNN (8 digits) followed by `suffix`; the step in `step`.
bool checkpoint_name(const std::string& name, const std::string& suffix, int64_t* step) {
  const std::string prefix = "ckpt-step";
  const size_t digits = 8;
  if (name.size() != prefix.size() + digits + suffix.size() || name.rfind(prefix, 0) != 0 ||
      name.compare(prefix.size() + digits, suffix.size(), suffix) != 0)
    return false;
  const std::string number = name.substr(prefix.size(), digits);
  if (!std::all_of(number.begin(), number.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  *step = std::stoll(number);
  return true;
}

// Whether `name` is a checkpoint's temporary file: ckpt-stepNNNNNNNN.h5.tmp-XXXXXX (six hex
// digits, as TemporaryFile makes), or ckpt-stepNNNNNNNN.h5.tmp (as earlier versions did).
bool checkpoint_temporary(const std::string& name) {
  int64_t step = 0;
  if (checkpoint_name(name, ".h5.tmp", &step)) return true;
  const size_t suffix = 7;  // "-XXXXXX"
  return name.size() > suffix && name[name.size() - suffix] == '-' &&
         name.find_first_not_of("0123456789abcdef", name.size() - suffix + 1) ==
             std::string::npos &&
         checkpoint_name(name.substr(0, name.size() - suffix), ".h5.tmp", &step);
}

// The checkpoints of a folder by step, newest first.
std::vector<std::pair<int64_t, std::string>> list_checkpoints(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code error;
  if (!fs::is_directory(dir, error)) return found;
  int64_t step = 0;
  for (const auto& entry : fs::directory_iterator(dir, error))
    if (checkpoint_name(entry.path().filename().string(), ".h5", &step))
      found.emplace_back(step, entry.path().string());
  RT_CHECK(!error, "--checkpoint-dir ", dir, ": cannot list it: ", error.message());
  std::sort(found.rbegin(), found.rend());
  return found;
}

}  // namespace

std::string checkpoint_path(const std::string& dir, int64_t step) {
  char name[32];
  std::snprintf(name, sizeof(name), "ckpt-step%08lld.h5", static_cast<long long>(step));
  return (fs::path(dir) / name).string();
}

std::string newest_checkpoint(const std::string& dir, std::vector<std::string>* skipped) {
  for (const auto& [step, path] : list_checkpoints(dir)) {
    try {
      verify_checkpoint(path);
      return path;
    } catch (const Error& e) {
      if (skipped) skipped->push_back(e.what());
    }
  }
  return "";
}

std::vector<std::string> prepare_checkpoint_dir(const std::string& dir) {
  std::error_code error;
  fs::create_directories(dir, error);
  RT_CHECK(!error, "--checkpoint-dir ", dir, ": cannot create it: ", error.message(),
           "; choose a writable --checkpoint-dir");
  const std::string probe = (fs::path(dir) / str_cat(".write-test-", getpid())).string();
  const int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  RT_CHECK(fd >= 0, "--checkpoint-dir ", dir,
           " is not writable (creating a file there failed: ", std::strerror(errno),
           "); choose a writable --checkpoint-dir");
  RT_CHECK(close(fd) == 0 && unlink(probe.c_str()) == 0, "--checkpoint-dir ", dir,
           ": removing the test file ", probe, " failed: ", std::strerror(errno));
  std::vector<std::string> removed;
  for (const auto& entry : fs::directory_iterator(dir))
    if (checkpoint_temporary(entry.path().filename().string()) && entry.is_regular_file(error))
      removed.push_back(entry.path().string());
  for (const std::string& path : removed)
    RT_CHECK(unlink(path.c_str()) == 0, "--checkpoint-dir ", dir, ": removing ", path,
             ", left by an interrupted checkpoint, failed: ", std::strerror(errno));
  return removed;
}

CheckpointRotation::CheckpointRotation(std::string dir, int keep, CheckpointMeta identity)
    : dir_(std::move(dir)), keep_(keep), identity_(std::move(identity)) {}

namespace {

// Size and modification time of a regular file (symbolic links followed); false otherwise.
bool regular_file_stamp(const std::string& path, off_t* size, int64_t* mtime_ns) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  *size = st.st_size;
  *mtime_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  return true;
}

}  // namespace

void CheckpointRotation::trust(const std::string& path) {
  Known known{Kind::good, 0, 0};
  if (regular_file_stamp(path, &known.size, &known.mtime_ns)) known_[path] = known;
}

CheckpointRotation::Kind CheckpointRotation::classify(const std::string& path) {
  Known now{Kind::not_a_file, 0, 0};
  if (!regular_file_stamp(path, &now.size, &now.mtime_ns)) return Kind::not_a_file;
  const auto found = known_.find(path);
  if (found != known_.end() && found->second.size == now.size &&
      found->second.mtime_ns == now.mtime_ns)
    return found->second.kind;
  try {
    const std::string mismatch = checkpoint_mismatch(verify_checkpoint(path), identity_);
    now.kind = mismatch.empty() ? Kind::good : Kind::foreign;
    if (!mismatch.empty())
      spdlog::info("--keep: leaves {} alone, another run's checkpoint: {}", path, mismatch);
  } catch (const CorruptCheckpoint& e) {
    now.kind = Kind::corrupt;
    move_aside(path, e.what());
  } catch (const Error& e) {
    now.kind = Kind::foreign;
    spdlog::info("--keep: leaves {} alone: {}", path, e.what());
  }
  known_[path] = now;
  return now.kind;
}

void CheckpointRotation::move_aside(const std::string& path, const std::string& why) {
  const std::string aside = path + ".corrupt";
  if (std::rename(path.c_str(), aside.c_str()) == 0)
    spdlog::warn("--keep: moved the corrupt {} aside to {} ({})", path, aside, why);
  else
    spdlog::warn("--keep: cannot move the corrupt {} aside to {}: {} ({})", path, aside,
                 std::strerror(errno), why);
}

void CheckpointRotation::remove(const std::string& path) {
  if (unlink(path.c_str()) != 0)
    spdlog::warn("--keep: cannot remove the older checkpoint {}: {}", path, std::strerror(errno));
  known_.erase(path);
}

void CheckpointRotation::prune(const std::string& written) {
  int kept = 0;
  for (const auto& [step, path] : list_checkpoints(dir_)) {
    if (path == written) {
      ++kept;
      continue;
    }
    if (classify(path) != Kind::good) continue;
    if (kept < keep_)
      ++kept;
    else
      remove(path);
  }
}

}  // namespace ringtrain
