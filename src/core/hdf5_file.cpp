#include "ringtrain/core/hdf5_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "ringtrain/core/atomic_file.hpp"
#include "ringtrain/core/error.hpp"

namespace ringtrain {
namespace {

// The file `fill` makes, built in memory: HDF5 never writes to the disk, so a full disk cannot
// fail one of its calls halfway (a failed H5Fclose leaves a half-closed file that crashes
// HDF5's clean-up at exit).
std::vector<char> build_image(const std::string& path,
                              const std::function<void(hid_t file)>& fill) {
  Hdf5Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  hdf5_check(fapl.get(), "H5Pcreate(H5P_FILE_ACCESS)");
  hdf5_check(H5Pset_fapl_core(fapl.get(), size_t{1} << 20, false), "H5Pset_fapl_core");
  Hdf5Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), H5Fclose);
  hdf5_check(file.get(), str_cat("H5Fcreate of ", path, " in memory"));
  fill(file.get());
  hdf5_check(H5Fflush(file.get(), H5F_SCOPE_GLOBAL), str_cat("H5Fflush of ", path));
  const ssize_t size = H5Fget_file_image(file.get(), nullptr, 0);
  hdf5_check(size, str_cat("H5Fget_file_image of ", path));
  std::vector<char> image(static_cast<size_t>(size));
  hdf5_check(H5Fget_file_image(file.get(), image.data(), image.size()),
             str_cat("H5Fget_file_image of ", path));
  file.close(str_cat("H5Fclose of ", path));
  return image;
}

struct StackWalk {
  std::string innermost, system;
};

herr_t visit_error(unsigned n, const H5E_error2_t* e, void* data) {
  auto* walk = static_cast<StackWalk*>(data);
  const std::string desc = e->desc ? e->desc : "";
  if (n == 0) walk->innermost = desc;
  int code = 0;
  const size_t at = desc.find("errno = ");
  if (walk->system.empty() && at != std::string::npos &&
      std::sscanf(desc.c_str() + at, "errno = %d", &code) == 1 && code > 0)
    walk->system = std::strerror(code);
  return 0;
}

}  // namespace

void Hdf5Handle::close(const std::string& what) {
  const hid_t id = id_;
  id_ = -1;  // Note: the destructor must not retry a close that failed
  hdf5_check(close_(id), what);
}

void silence_hdf5() {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

std::string hdf5_error_text() {
  StackWalk walk;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, visit_error, &walk);
  if (!walk.system.empty()) return walk.system;
  return walk.innermost.empty() ? "HDF5 gave no reason" : walk.innermost;
}

void hdf5_check(int64_t status, const std::string& what) {
  if (status < 0) throw Error(str_cat(what, ": ", hdf5_error_text()));
}

void write_hdf5_atomically(const std::string& path, const std::function<void(hid_t file)>& fill,
                           const WriteProgress& progress, OutputKinds kinds) {
  silence_hdf5();
  std::vector<char> image;
  try {
    image = build_image(path, fill);
  } catch (const Error& e) {
    throw Error(str_cat("cannot write ", path, ": ", e.what()));
  }
  write_file_atomically(path, image, progress, kinds);
}

}  // namespace ringtrain
