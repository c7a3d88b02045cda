#pragma once
// cuDNN's algorithm searches kept in a file, so that a process searches only the convolutions
// that no earlier process searched on the same GPU model with the same cuDNN. Host code, free of
// CUDA types, unit-tested without a GPU.
#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "ringtrain/backend/cuda/conv_algo.hpp"

namespace ringtrain {

// What stored choices are valid on: another GPU model or cuDNN version times the algorithms
// differently and may lack some of them.
struct ConvAlgoContext {
  std::string gpu;        // the device's name, e.g. "NVIDIA H200"
  int cudnn_version = 0;  // cudnnGetVersion()
};

// Receives the file's messages: a file ignored (corrupt, from another GPU or cuDNN) or one
// that cannot be written.
using ConvAlgoNote = std::function<void(const std::string&)>;

// A note callback that logs a warning on rank 0 and stays quiet on the other ranks.
ConvAlgoNote warn_on_rank0(int rank);

// Note: the file is JSON: the format, the context, and one entry per (pass, geometry, dtype,
// layout) with the algorithm, math type, workspace, input channels and measured time. Each
// add() rewrites it whole, under an exclusive flock on PATH.lock: it re-reads the file, keeps
// the entries other processes added since, adds its own, and replaces the file atomically
// (PATH.tmp, fsync, rename). So the ranks of a job, or replicas of one process, may share one
// file, and a process killed at any point leaves either the old file or the new one. A file
// that cannot be read or written never stops a run: the search runs, as without a file. Nor
// does another process's lock: one held longer than `lock_wait` (a process stopped while
// holding it) gives one note naming the lock file and its holder, and this process goes on
// without writing the file. A file over kMaxFileBytes is ignored with a note, never read whole.
class ConvAlgoFile {
 public:
  static constexpr std::size_t kMaxFileBytes = std::size_t{64} << 20;

  // Reads `path` when it exists. A missing file is an empty cache; a corrupt file, or one from
  // another GPU, cuDNN or format, is ignored with one note and replaced by the first add().
  ConvAlgoFile(std::string path, ConvAlgoContext context, ConvAlgoNote note = {},
               std::chrono::milliseconds lock_wait = std::chrono::seconds(30));

  const std::string& path() const { return path_; }
  std::size_t size() const { return entries_.size(); }
  std::optional<ConvChoice> find(const ConvKey& key) const;
  // Stores `choice` for `key` and rewrites the file, merged with what others wrote.
  void add(const ConvKey& key, const ConvChoice& choice);

 private:
  using Entries = std::map<ConvKey, ConvChoice>;
  // The entries of the file on disk; nothing (and why) when it is not usable.
  std::optional<Entries> read(std::string& why) const;
  void write(const Entries& entries);
  void give_up(const std::string& why);

  std::string path_;
  ConvAlgoContext context_;
  ConvAlgoNote note_;
  std::chrono::milliseconds lock_wait_;
  Entries entries_;
  bool writable_ = true;  // false after a failed write: one note, then searches are not kept
};

// The choice for `key`: the file's when it holds one within `workspace_limit`, else what
// `search` finds, which is then added to the file. Without a file, `search`'s.
std::optional<ConvChoice> find_or_search(ConvAlgoFile* file, const ConvKey& key,
                                         std::size_t workspace_limit,
                                         const std::function<std::optional<ConvChoice>()>& search);

}  // namespace ringtrain
