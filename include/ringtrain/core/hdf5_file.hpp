#pragma once
// The HDF5 plumbing shared by the dataset files and the checkpoints.
#include <hdf5.h>

#include <functional>
#include <string>

namespace ringtrain {

// Owns one HDF5 identifier and closes it with the matching H5?close.
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

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

// HDF5 prints its own error stack by default; ours names the file and the dataset instead.
void silence_hdf5();

// Creates `path` so that no reader ever sees it half written: `fill` writes into PATH.tmp,
// which is closed, fsynced and renamed into place (and the folder fsynced); on any failure the
// temporary file is removed and the error passed on.
void write_hdf5_atomically(const std::string& path, const std::function<void(hid_t file)>& fill);

}  // namespace ringtrain
