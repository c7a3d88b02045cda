#include "ringtrain/backend/cuda/conv_algo_cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <spdlog/spdlog.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "ringtrain/backend/op_checks.hpp"
#include "ringtrain/core/atomic_file.hpp"
#include "ringtrain/core/error.hpp"
#include "ringtrain/core/json_text.hpp"

namespace ringtrain {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kFormat = "ringtrain conv algorithms 1";
// The CUDA backend runs every convolution in NHWC; entries of another layout are not ours.
constexpr const char* kLayout = "nhwc";

const DType kDtypes[] = {DType::f32, DType::bf16, DType::f16};
const ConvPass kPasses[] = {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_filter};

template <class T, std::size_t N>
T by_name(const T (&values)[N], const std::string& name, std::string (*name_of)(T)) {
  for (const T v : values)
    if (name_of(v) == name) return v;
  throw Error(str_cat("unknown name '", name, "'"));
}

std::string pass_text(ConvPass p) {
  return conv_pass_name(p);
}

json entry_json(const ConvKey& key, const ConvChoice& c) {
  const ConvGeometry& g = key.g;
  return {{"pass", pass_text(key.pass)},
          {"dtype", dtype_name(key.dtype)},
          {"layout", kLayout},
          {"n", g.n},
          {"c", g.c},
          {"h", g.h},
          {"w", g.w},
          {"k", g.k},
          {"r", g.r},
          {"s", g.s},
          {"stride", g.stride},
          {"pad", g.pad},
          {"algo", c.algo},
          {"math", c.math_type},
          {"workspace", c.workspace},
          {"channels", c.channels},
          {"time_ms", c.time_ms}};
}

void add_entry(const json& e, std::map<ConvKey, ConvChoice>& entries) {
  if (e.at("layout").get<std::string>() != kLayout) return;
  ConvKey key;
  key.pass = by_name(kPasses, e.at("pass").get<std::string>(), pass_text);
  key.dtype = by_name(kDtypes, e.at("dtype").get<std::string>(), dtype_name);
  ConvGeometry& g = key.g;
  for (auto [field, name] : {std::pair{&g.n, "n"},
                             {&g.c, "c"},
                             {&g.h, "h"},
                             {&g.w, "w"},
                             {&g.k, "k"},
                             {&g.r, "r"},
                             {&g.s, "s"},
                             {&g.stride, "stride"},
                             {&g.pad, "pad"}})
    *field = e.at(name).get<int>();
  const ConvChoice c{e.at("algo").get<int>(), e.at("math").get<int>(),
                     e.at("workspace").get<std::size_t>(), e.at("channels").get<int>(),
                     e.at("time_ms").get<float>()};
  RT_CHECK(c.channels >= g.c, "an entry runs ", g.str(), " with fewer channels (", c.channels, ")");
  entries[key] = c;
}

std::string errno_text() {
  return std::strerror(errno);
}

// " (held by pid N)" from /proc/locks for the file open as `fd`, or "" when not known.
std::string lock_holder(int fd) {
  struct stat st {};
  std::ifstream locks("/proc/locks");
  if (fstat(fd, &st) != 0 || !locks) return "";
  char id[64];
  std::snprintf(id, sizeof id, " %02x:%02x:%lu ", major(st.st_dev), minor(st.st_dev),
                static_cast<unsigned long>(st.st_ino));
  for (std::string line; std::getline(locks, line);) {
    const std::size_t at = line.find(id);
    if (at == std::string::npos || line.find("->") != std::string::npos) continue;
    const std::size_t pid = line.rfind(' ', at - 1);
    return str_cat(" (held by pid ", line.substr(pid + 1, at - pid - 1), ")");
  }
  return "";
}

// An exclusive flock on PATH.lock for as long as it lives, waited for `wait` at most: a process
// stopped while it holds the lock must not stall every other one's start.
class FileLock {
 public:
  FileLock(const std::string& path, std::chrono::milliseconds wait) : path_(path + ".lock") {
    fd_ = open(path_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    RT_CHECK(fd_ >= 0, "open of ", path_, " failed: ", errno_text());
    const auto until = std::chrono::steady_clock::now() + wait;
    int status;
    while ((status = flock(fd_, LOCK_EX | LOCK_NB)) != 0 &&
           (errno == EINTR || errno == EWOULDBLOCK) && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (status != 0) {
      const std::string why = errno == EWOULDBLOCK
                                  ? str_cat("another process holds its lock ", path_,
                                            lock_holder(fd_), " for over ", wait.count(), " ms")
                                  : str_cat("flock of ", path_, " failed: ", errno_text());
      ::close(fd_);
      throw Error(why);
    }
  }
  // Closing the descriptor releases the lock.
  ~FileLock() {
    if (::close(fd_) != 0) spdlog::warn("close of {} failed: {}", path_, errno_text());
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  std::string path_;
  int fd_ = -1;
};

// The whole of the regular file `path`, when it is one of at most `limit` bytes; nothing (and
// why, empty for a missing file) otherwise. Opened without waiting (O_NONBLOCK): a FIFO is
// refused, never read.
std::optional<std::string> read_capped(const std::string& path, std::size_t limit,
                                       std::string& why) {
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    why = errno == ENOENT || errno == ENOTDIR ? "" : str_cat("cannot read it: ", errno_text());
    return std::nullopt;
  }
  struct stat st {};
  std::string text;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    why = "not a regular file";
  } else if (static_cast<std::size_t>(st.st_size) > limit) {
    why = str_cat(st.st_size, " bytes, over the ", limit, " a cache file may have");
  } else {
    text.resize(limit + 1);
    std::size_t done = 0;
    ssize_t n;
    while ((n = ::read(fd, text.data() + done, text.size() - done)) > 0 ||
           (n < 0 && errno == EINTR))
      done += n > 0 ? static_cast<std::size_t>(n) : 0;
    if (n < 0) why = str_cat("cannot read it: ", errno_text());
    if (done > limit) why = str_cat("over the ", limit, " bytes a cache file may have");
    text.resize(done);
  }
  ::close(fd);
  if (!why.empty()) return std::nullopt;
  return text;
}

}  // namespace

ConvAlgoNote warn_on_rank0(int rank) {
  return [rank](const std::string& text) {
    if (rank == 0) spdlog::warn("{}", text);
  };
}

ConvAlgoFile::ConvAlgoFile(std::string path, ConvAlgoContext context, ConvAlgoNote note,
                           std::chrono::milliseconds lock_wait)
    : path_(std::move(path)),
      context_(std::move(context)),
      note_(std::move(note)),
      lock_wait_(lock_wait) {
  std::string why;
  if (std::optional<Entries> on_disk = read(why)) {
    entries_ = std::move(*on_disk);
  } else if (!why.empty() && note_) {
    note_(str_cat("conv algorithm cache ", path_, " ignored: ", why,
                  "; the convolutions are searched again and the file rewritten"));
  }
}

std::optional<ConvAlgoFile::Entries> ConvAlgoFile::read(std::string& why) const {
  const std::optional<std::string> text = read_capped(path_, kMaxFileBytes, why);
  if (!text) return why.empty() ? std::optional<Entries>(Entries{}) : std::nullopt;
  try {
    const json doc = json::parse(*text);
    if (doc.at("format") != kFormat) {
      why = str_cat("format ", doc.at("format").dump(), ", expected \"", kFormat, "\"");
      return std::nullopt;
    }
    const std::string gpu = doc.at("gpu");
    const int cudnn = doc.at("cudnn");
    if (gpu != context_.gpu || cudnn != context_.cudnn_version) {
      why = str_cat("measured on ", gpu, " with cuDNN ", cudnn, ", this process runs on ",
                    context_.gpu, " with cuDNN ", context_.cudnn_version);
      return std::nullopt;
    }
    Entries entries;
    for (const json& e : doc.at("entries")) add_entry(e, entries);
    return entries;
  } catch (const std::exception& e) {
    why = str_cat("corrupt (", e.what(), ")");
    return std::nullopt;
  }
}

std::optional<ConvChoice> ConvAlgoFile::find(const ConvKey& key) const {
  const auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

void ConvAlgoFile::add(const ConvKey& key, const ConvChoice& choice) {
  entries_[key] = choice;
  if (!writable_) return;
  try {
    const fs::path parent = fs::path(path_).parent_path();
    if (!parent.empty()) fs::create_directories(parent);
    const FileLock lock(path_, lock_wait_);
    std::string why;
    Entries merged = read(why).value_or(Entries{});
    for (const auto& [k, c] : entries_) merged[k] = c;
    write(merged);
    entries_ = std::move(merged);
  } catch (const std::exception& e) {
    give_up(e.what());
  }
}

void ConvAlgoFile::write(const Entries& entries) {
  json doc = {{"format", kFormat},
              {"gpu", context_.gpu},
              {"cudnn", context_.cudnn_version},
              {"entries", json::array()}};
  for (const auto& [k, c] : entries) doc["entries"].push_back(entry_json(k, c));
  const std::string text = json_text(doc, 1) + "\n";
  write_file_atomically(path_, std::vector<char>(text.begin(), text.end()), {}, OutputKinds::files);
}

void ConvAlgoFile::give_up(const std::string& why) {
  writable_ = false;
  if (note_)
    note_(str_cat("conv algorithm cache ", path_, " cannot be written (", why,
                  "); this run's searches are not kept for the next one"));
}

std::optional<ConvChoice> find_or_search(ConvAlgoFile* file, const ConvKey& key,
                                         std::size_t workspace_limit,
                                         const std::function<std::optional<ConvChoice>()>& search) {
  if (file) {
    const std::optional<ConvChoice> stored = file->find(key);
    if (stored && stored->workspace <= workspace_limit) return stored;
  }
  std::optional<ConvChoice> found = search();
  if (found && file) file->add(key, *found);
  return found;
}

}  // namespace ringtrain
