#pragma once
// Whether a GPU runs the kernels this build holds, decided before the first kernel: machine code
// (SASS) for its family, PTX the driver compiles for it, or neither (then the run stops, naming
// the card and the CMake flag that builds for it). Free of CUDA types, so that it is unit-tested
// without a GPU.
#include <string>
#include <string_view>
#include <vector>

namespace ringtrain {

// One entry of CMAKE_CUDA_ARCHITECTURES: "86" (machine code and PTX for compute capability 8.6),
// "86-real" (machine code only), "86-virtual" (PTX only), "90a" (for exactly 9.0), "100f" (for
// the 10.x family only).
struct CudaArchitecture {
  enum class Scope { portable, family, exact };
  int number = 0;  // 10 * major + minor
  bool machine_code = false;
  bool ptx = false;
  Scope scope = Scope::portable;
};

// The entries of a CMake architecture list, separated by ';' or ','. Throws Error on one that is
// not of the forms above.
std::vector<CudaArchitecture> parse_cuda_architectures(std::string_view list);

// What a device start-up learns of its GPU.
struct GpuIdentity {
  int device = 0;
  std::string name;  // "NVIDIA A100-SXM4-80GB"
  int major = 0, minor = 0;
};

enum class KernelSource { machine_code, ptx, none };

struct ArchitectureVerdict {
  KernelSource source = KernelSource::none;
  std::string message;  // empty for machine code; the note (PTX) or the error (none)
};

// The decision for `gpu` given the build's list: machine code of its major version at or below
// its minor one runs as is; otherwise PTX at or below its compute capability is compiled by the
// driver; otherwise nothing runs.
ArchitectureVerdict match_cuda_architecture(const GpuIdentity& gpu, std::string_view built);

// At device start-up: throws Error with the verdict's message when the GPU runs none of the
// build's kernels; logs the note on rank 0 when the driver compiles them from PTX.
void require_cuda_architecture(const GpuIdentity& gpu, std::string_view built, int rank);

}  // namespace ringtrain
