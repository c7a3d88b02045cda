#include "ringtrain/backend/cuda/architectures.hpp"

#include <spdlog/spdlog.h>

#include <cctype>

#include "ringtrain/core/error.hpp"

namespace ringtrain {
namespace {

CudaArchitecture parse_entry(std::string_view entry) {
  CudaArchitecture a;
  std::size_t i = 0;
  while (i < entry.size() && std::isdigit(static_cast<unsigned char>(entry[i])))
    a.number = a.number * 10 + (entry[i++] - '0');
  if (i < entry.size() && (entry[i] == 'a' || entry[i] == 'f'))
    a.scope = entry[i++] == 'a' ? CudaArchitecture::Scope::exact : CudaArchitecture::Scope::family;
  const std::string_view kind = entry.substr(i);
  a.machine_code = kind.empty() || kind == "-real";
  a.ptx = kind.empty() || kind == "-virtual";
  if (i == 0 || i > 4 || a.number < 10 || !(a.machine_code || a.ptx))
    throw Error(str_cat("CUDA architecture list: '", entry,
                        "' is not a compute capability such as 86, 86-real, 86-virtual or 90a"));
  return a;
}

std::string capability(int number) {
  return str_cat(number / 10, ".", number % 10);
}

// Whether code for `a` runs on a GPU of compute capability `gpu` (10 * major + minor); machine
// code only within its major version.
bool runs_on(const CudaArchitecture& a, int gpu, bool as_machine_code) {
  if (a.scope == CudaArchitecture::Scope::exact) return a.number == gpu;
  const bool same_major = a.number / 10 == gpu / 10;
  if (as_machine_code || a.scope == CudaArchitecture::Scope::family)
    return same_major && a.number <= gpu;
  return a.number <= gpu;
}

// The newest entry of `kind` that runs on `gpu`, or 0.
int best_match(const std::vector<CudaArchitecture>& built, int gpu, bool machine_code) {
  int best = 0;
  for (const CudaArchitecture& a : built)
    if ((machine_code ? a.machine_code : a.ptx) && runs_on(a, gpu, machine_code) && a.number > best)
      best = a.number;
  return best;
}

// "machine code for 7.5, 8.0, 9.0; PTX for 9.0"
std::string describe(const std::vector<CudaArchitecture>& built) {
  std::string machine_code, ptx;
  for (const CudaArchitecture& a : built) {
    if (a.machine_code) machine_code += (machine_code.empty() ? "" : ", ") + capability(a.number);
    if (a.ptx) ptx += (ptx.empty() ? "" : ", ") + capability(a.number);
  }
  return str_cat("machine code for ", machine_code.empty() ? "none" : machine_code, "; PTX for ",
                 ptx.empty() ? "none" : ptx);
}

}  // namespace

std::vector<CudaArchitecture> parse_cuda_architectures(std::string_view list) {
  std::vector<CudaArchitecture> out;
  while (!list.empty()) {
    const std::size_t end = list.find_first_of(";,");
    const std::string_view entry = list.substr(0, end);
    if (!entry.empty()) out.push_back(parse_entry(entry));
    list = end == std::string_view::npos ? std::string_view() : list.substr(end + 1);
  }
  return out;
}

ArchitectureVerdict match_cuda_architecture(const GpuIdentity& gpu, std::string_view built) {
  const std::vector<CudaArchitecture> archs = parse_cuda_architectures(built);
  const int number = 10 * gpu.major + gpu.minor;
  const std::string card =
      str_cat("GPU ", gpu.device, " (", gpu.name, ", compute capability ", capability(number), ")");
  const std::string flag = str_cat("-DCMAKE_CUDA_ARCHITECTURES=", number);
  if (best_match(archs, number, true) != 0) return {KernelSource::machine_code, ""};
  if (const int ptx = best_match(archs, number, false); ptx != 0)
    return {KernelSource::ptx,
            str_cat(card, " has no machine code in this build (", describe(archs),
                    "): the driver compiles the kernels from PTX ", capability(ptx),
                    " at start-up (slower the first time; the driver caches the result); ", flag,
                    " (or =native on this machine) builds machine code for it")};
  return {KernelSource::none, str_cat(card, " runs none of this build's CUDA kernels (",
                                      describe(archs), "): rebuild with ", flag,
                                      " (or =native on this machine), or run on the CPU "
                                      "with --device cpu")};
}

void require_cuda_architecture(const GpuIdentity& gpu, std::string_view built, int rank) {
  const ArchitectureVerdict verdict = match_cuda_architecture(gpu, built);
  if (verdict.source == KernelSource::none) throw Error(verdict.message);
  if (verdict.source == KernelSource::ptx && rank == 0) spdlog::warn("{}", verdict.message);
}

}  // namespace ringtrain
