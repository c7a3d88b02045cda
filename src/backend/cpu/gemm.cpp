// The CPU backend's GEMMs: f32 through oneDNN, f64 (the finite-difference checks) through
// OpenBLAS.
#include <cblas.h>
#include <dnnl.h>
#include <omp.h>

#include "kernels.hpp"
#include "ringtrain/core/error.hpp"
#include "signals_deferred.hpp"

namespace ringtrain::cpu {

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

}  // namespace ringtrain::cpu
