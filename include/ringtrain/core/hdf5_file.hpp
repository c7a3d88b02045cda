#pragma once
// The HDF5 plumbing shared by the dataset files and the checkpoints.
#include <hdf5.h>

#include <cstdint>
#include <functional>
#include <string>

#include "ringtrain/core/atomic_file.hpp"

namespace ringtrain {

// Owns one HDF5 identifier and closes it with the matching H5?close. The destructor cannot
// report a failed close: where the close writes (a file being written), call close() instead.
class Hdf5Handle {
 public:
  Hdf5Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Hdf5Handle() {
    if (id_ >= 0) close_(id_);
  }
  Hdf5Handle(Hdf5Handle&& other) noexcept : id_(other.id_), close_(other.close_) { other.id_ = -1; }
  Hdf5Handle(const Hdf5Handle&) = delete;
  Hdf5Handle& operator=(const Hdf5Handle&) = delete;
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }
  // Closes now; throws an Error naming `what` and HDF5's reason when the close fails.
  void close(const std::string& what);

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

// HDF5 prints its own error stack by default; ours names the file and the dataset instead.
void silence_hdf5();

// The reason HDF5 gives for the last failed call of this thread: the system's error text
// ("No space left on device") when a read or write of the file failed, else the innermost
// message of HDF5's error stack.
std::string hdf5_error_text();

// Throws an Error "what: <hdf5_error_text()>" when `status` (an herr_t or hid_t) is negative.
void hdf5_check(int64_t status, const std::string& what);

// Creates `path` so that no reader ever sees it half written and a full disk never leaves a
// torn file: `fill` builds the file in memory (HDF5's core driver), whose image is then written
// to PATH.tmp with checked POSIX writes, fsynced, closed and renamed into place, and the folder
// fsynced. On any failure the temporary file is removed and an Error names the call, the file
// and the system's reason (with the bytes needed and free when the disk is full).
// `kinds`: what `path` may name besides a regular file, as for write_file_atomically.
void write_hdf5_atomically(const std::string& path, const std::function<void(hid_t file)>& fill,
                           const WriteProgress& progress = {},
                           OutputKinds kinds = OutputKinds::files_and_streams);

}  // namespace ringtrain
