#include "ringtrain/checkpoint/checkpoint_folder.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>

#include "ringtrain/checkpoint/resume_position.hpp"
#include "ringtrain/core/error.hpp"

namespace ringtrain {
namespace {

namespace fs = std::filesystem;

// Whether `name` is ckpt-stepNNNNNNNN (8 digits or more, as checkpoint_path writes them)
// followed by `suffix`; the step in `step`.
bool checkpoint_name(const std::string& name, const std::string& suffix, int64_t* step) {
  const std::string prefix = "ckpt-step";
  const size_t min_digits = 8, max_digits = 19;  // int64_t's largest has 19
  if (name.size() < prefix.size() + min_digits + suffix.size() || name.rfind(prefix, 0) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return false;
  const std::string number =
      name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (number.size() > max_digits ||
      !std::all_of(number.begin(), number.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  errno = 0;
  *step = std::strtoll(number.c_str(), nullptr, 10);
  return errno == 0;
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

namespace {

// Whether a live process holds the temporary `path` (TemporaryFile locks the file it writes):
// such a file is a checkpoint being written, not one an interrupted run left. Takes the lock
// and removes the file when nobody holds it; returns whether it was removed.
bool remove_unless_held(const std::string& dir, const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;  // gone already, or a link: not a temporary TemporaryFile made
  const bool held = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  const bool removed = !held && unlink(path.c_str()) == 0;
  const int unlink_error = errno;
  RT_CHECK(close(fd) == 0, "--checkpoint-dir ", dir, ": close of ", path,
           " failed: ", std::strerror(errno));
  RT_CHECK(held || removed || unlink_error == ENOENT, "--checkpoint-dir ", dir, ": removing ", path,
           ", left by an interrupted checkpoint, failed: ", std::strerror(unlink_error));
  return removed;
}

// The claim file's text (who holds it), at most 4 KiB of it.
std::string read_holder(int fd) {
  char text[4096];
  const ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
  return n > 0 ? std::string(text, static_cast<size_t>(n)) : std::string("a process");
}

}  // namespace

CheckpointFolderClaim::CheckpointFolderClaim(const std::string& dir, const std::string& holder) {
  const std::string path = (fs::path(dir) / ".ringtrain-run.lock").string();
  fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  struct stat st {};
  RT_CHECK(fd_ >= 0 && fstat(fd_, &st) == 0 && S_ISREG(st.st_mode), "--checkpoint-dir ", dir,
           ": cannot claim it for this run through ", path, " (",
           fd_ < 0 ? std::strerror(errno) : "not a regular file",
           "); remove that file, or choose another --checkpoint-dir");
  if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    if (error == EWOULDBLOCK)
      throw ConfigError(str_cat("--checkpoint-dir ", dir, " is in use by another run (",
                                read_holder(fd_), "): two runs in one folder overwrite each ",
                                "other's checkpoints; give this run its own --checkpoint-dir"));
    spdlog::warn(
        "--checkpoint-dir {}: cannot lock {} ({}): another run using this folder at "
        "the same time would not be noticed",
        dir, path, std::strerror(error));
    return;
  }
  RT_CHECK(ftruncate(fd_, 0) == 0 &&
               pwrite(fd_, holder.data(), holder.size(), 0) == static_cast<ssize_t>(holder.size()),
           "--checkpoint-dir ", dir, ": writing ", path, " failed: ", std::strerror(errno));
}

CheckpointFolderClaim::~CheckpointFolderClaim() {
  if (fd_ >= 0) close(fd_);  // drops the lock; nothing is lost when close reports an error
}

CheckpointFolderClaim::CheckpointFolderClaim(CheckpointFolderClaim&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)) {}

CheckpointFolderClaim& CheckpointFolderClaim::operator=(CheckpointFolderClaim&& other) noexcept {
  std::swap(fd_, other.fd_);
  return *this;
}

CheckpointFolder prepare_checkpoint_dir(const std::string& dir, const std::string& holder) {
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
  CheckpointFolder folder{CheckpointFolderClaim(dir, holder), {}};
  std::vector<std::string> temporaries;
  for (const auto& entry : fs::directory_iterator(dir))
    if (checkpoint_temporary(entry.path().filename().string()) && entry.is_regular_file(error))
      temporaries.push_back(entry.path().string());
  for (const std::string& path : temporaries)
    if (remove_unless_held(dir, path)) folder.removed.push_back(path);
  return folder;
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
  Known known{Kind::good, 0, 0, ""};
  if (regular_file_stamp(path, &known.size, &known.mtime_ns)) known_[path] = known;
}

const CheckpointRotation::Known& CheckpointRotation::classify(const std::string& path) {
  Known now{Kind::not_a_file, 0, 0, ""};
  if (!regular_file_stamp(path, &now.size, &now.mtime_ns)) return known_[path] = now;
  const auto found = known_.find(path);
  if (found == known_.end() || found->second.size != now.size ||
      found->second.mtime_ns != now.mtime_ns)
    known_[path] = examine(path, now);
  return known_[path];
}

CheckpointRotation::Known CheckpointRotation::examine(const std::string& path, Known now) {
  now.kind = Kind::foreign;
  try {
    now.why = run_mismatch(verify_checkpoint(path), identity_);
    now.kind = now.why.empty() ? Kind::good : Kind::foreign;
  } catch (const CorruptCheckpoint& e) {
    now.kind = Kind::corrupt;
    move_aside(path, e.what());
  } catch (const UnloadableCheckpoint& e) {
    now.why = run_mismatch(read_checkpoint_meta(path), identity_);
    now.kind = now.why.empty() ? Kind::unloadable : Kind::foreign;
    spdlog::info("--keep: does not count {}: {}", path, e.what());
  } catch (const Error& e) {
    now.why = e.what();
  }
  if (now.kind == Kind::foreign)
    spdlog::info("--keep: leaves {} alone, another run's checkpoint: {}", path, now.why);
  return now;
}

void CheckpointRotation::refuse_steps_of_other_runs(int64_t first, int64_t last,
                                                    const std::string& resumed) {
  for (const auto& [step, path] : list_checkpoints(dir_)) {
    if (step < first || step > last || path == resumed) continue;
    const Known& known = classify(path);
    RT_CHECK_AS(ConfigError, known.kind != Kind::foreign, "--checkpoint-dir ", dir_, " holds ",
                path, ", another run's checkpoint (", known.why, "), at a step this run may ",
                "write (", first, " to ", last, "): give this run its own --checkpoint-dir, or ",
                "move that run's checkpoints elsewhere");
  }
}

void CheckpointRotation::refuse_to_replace(const std::string& path) {
  const Known& known = classify(path);
  RT_CHECK(known.kind != Kind::foreign, "checkpoint ", path, " holds another run's checkpoint (",
           known.why, "): not replaced; give this run its own --checkpoint-dir");
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
    if (classify(path).kind != Kind::good) continue;
    if (kept < keep_)
      ++kept;
    else
      remove(path);
  }
}

}  // namespace ringtrain
