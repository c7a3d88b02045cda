#include "ringtrain/core/output_file.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

#include "ringtrain/core/atomic_file.hpp"
#include "ringtrain/core/error.hpp"

namespace ringtrain {

void create_parent_folder(const std::string& path, const std::string& flag) {
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) return;
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  RT_CHECK(!error, flag, ": cannot create the folder ", dir.string(), " for ", path, ": ",
           error.message(), "; choose a writable path");
}

void check_output_outside(const std::string& out, const std::string& input, const std::string& what,
                          const std::string& input_flag) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::path at = fs::weakly_canonical(fs::absolute(out, error), error);
  if (error) return;  // Note: a path that cannot be resolved is refused when it is written
  for (bool first = true;; first = false) {
    std::error_code differs;  // either path missing: not the same
    RT_CHECK_AS(ConfigError, !fs::equivalent(at, input, differs), what, out,
                first ? " is " : " lies inside ", input, ", which this command reads",
                input_flag.empty() ? "" : " as " + input_flag, ": write the output elsewhere");
    if (at == at.parent_path()) return;
    at = at.parent_path();
  }
}

void check_outputs_apart(const std::vector<FlagPath>& outputs, const std::vector<FlagPath>& inputs,
                         const std::string& what) {
  for (const FlagPath& out : outputs)
    for (const FlagPath& in : inputs)
      if (!out.path.empty() && !in.path.empty())
        check_output_outside(out.path, in.path, str_cat(what, out.flag, " "), in.flag);
}

std::ofstream open_output(const std::string& path, const std::string& flag, bool append) {
  create_parent_folder(path, flag);
  errno = 0;
  std::ofstream out(path, append ? std::ios::app : std::ios::trunc);
  RT_CHECK(out.is_open(), flag, ": cannot open ", path,
           " for writing: ", errno != 0 ? std::strerror(errno) : "unknown reason",
           "; choose a writable path");
  return out;
}

void check_output(std::ofstream& out, const std::string& path, const std::string& flag) {
  out.flush();
  RT_CHECK(out.good(), flag, ": writing ", path,
           " failed: ", errno != 0 ? std::strerror(errno) : "stream error",
           "; check the free space there");
}

void write_text_file(const std::string& path, const std::string& text, const std::string& flag) {
  create_parent_folder(path, flag);
  try {
    write_file_atomically(path, std::vector<char>(text.begin(), text.end()));
  } catch (const Error& e) {
    throw Error(str_cat(flag, ": ", e.what()));
  }
}

}  // namespace ringtrain
