#include "ringtrain/core/host.hpp"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>

#include "ringtrain/core/error.hpp"

namespace ringtrain {

std::string host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  RT_CHECK(gethostname(name, sizeof(name) - 1) == 0, "gethostname: ", std::strerror(errno));
  return name;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    // "model name\t: Intel(R) Xeon(R) ..." (x86; other CPUs may lack the line).
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const size_t start = line.find_first_not_of(" \t", colon + 1);
    if (start != std::string::npos) return line.substr(start);
  }
  return "unknown CPU";
}

}  // namespace ringtrain
