// The CPU backend's GEMMs: f32 through oneDNN, f64 (the finite-difference checks) through
// OpenBLAS.
#include <cblas.h>
#include <dnnl.h>
#include <omp.h>

#include "kernels.hpp"
#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/core/error.hpp"
#include "signals_deferred.hpp"

namespace ringtrain {

// The kernels differ in more than speed: AVX2 and AVX-512 kernels add in other orders, so two
// machines round differently, and a run's log says which it may use.
std::string CpuBackend::kernel_isa() {
  switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41:
      return "sse41";
    case dnnl_cpu_isa_avx:
      return "avx";
    case dnnl_cpu_isa_avx2:
      return "avx2";
    case dnnl_cpu_isa_avx2_vnni:
      return "avx2_vnni";
    case dnnl_cpu_isa_avx512_core:
      return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx:
      return "avx512_core_amx";
    default:
      return str_cat("oneDNN ISA ", int(dnnl_get_effective_cpu_isa()));
  }
}

namespace cpu {

void single_threaded_onednn() {
  thread_local const bool pinned = (omp_set_num_threads(1), true);
  (void)pinned;
}

// f32 goes through oneDNN's sgemm, which picks its AVX-512/AVX2 kernels from the CPUID feature
// bits; Debian's OpenBLAS 0.3.21 falls back to its SSE3 kernels on CPUs it does not know by
// model number (docs/perf/cpu.md). Each call is single-threaded: the pool already runs one
// GEMM per thread.
void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc) {
  single_threaded_onednn();
  dnnl_status_t status = dnnl_success;
  with_signals_deferred("gemm", [&] {  // signals_deferred.hpp: why
    status =
        dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  });
  RT_CHECK(status == dnnl_success, "gemm: dnnl_sgemm failed with status ", int(status), " for m ",
           m, " n ", n, " k ", k);
}

void gemm(bool ta, bool tb, int m, int n, int k, double alpha, const double* a, int lda,
          const double* b, int ldb, double beta, double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
              k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace cpu
}  // namespace ringtrain
