// The CPU backend's GEMMs: f32 through oneDNN, f64 (the finite-difference checks) through
// OpenBLAS.
#include <cblas.h>
#include <dnnl.h>
#include <omp.h>
#include <pthread.h>

#include <csignal>
#include <cstring>

#include "kernels.hpp"
#include "ringtrain/core/error.hpp"

namespace ringtrain::cpu {
namespace {

// Note: oneDNN's JIT GEMM kernels (AVX2 and AVX-512, up to oneDNN 3.11.1; Debian ships 2.6)
// point the stack pointer at their heap workspace while they run. A signal delivered to the
// thread then has its frame pushed there by the kernel and overwrites the heap: a run stopped
// with SIGUSR1 or SIGTERM, or watched by a sampling profiler, died with "corrupted size vs.
// prev_size" instead of writing its checkpoint. So the asynchronous signals are blocked on
// this thread for the duration of the call and delivered when it returns, a GEMM (at most
// milliseconds) later. Faults (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT) stay
// unblocked so that a crash still reports itself.
sigset_t asynchronous_signals() {
  sigset_t set;
  sigfillset(&set);
  for (const int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT})
    sigdelset(&set, fault);
  return set;
}

// Blocks the asynchronous signals on this thread; returns the mask to restore.
sigset_t defer_signals() {
  static const sigset_t deferred = asynchronous_signals();
  sigset_t previous;
  const int code = pthread_sigmask(SIG_BLOCK, &deferred, &previous);
  RT_CHECK(code == 0, "gemm: pthread_sigmask(SIG_BLOCK) failed: ", std::strerror(code),
           "; a signal during the GEMM would corrupt oneDNN's workspace");
  return previous;
}

void restore_signals(const sigset_t& previous) {
  const int code = pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  RT_CHECK(code == 0, "gemm: pthread_sigmask(SIG_SETMASK) failed: ", std::strerror(code),
           "; this thread would no longer see stop signals");
}

}  // namespace

// f32 goes through oneDNN's sgemm, which picks its AVX-512/AVX2 kernels from the CPUID feature
// bits; Debian's OpenBLAS 0.3.21 falls back to its SSE3 kernels on CPUs it does not know by
// model number (docs/perf/cpu.md). Each call is single-threaded: the pool already runs one
// GEMM per thread.
void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc) {
  thread_local const bool single_threaded = (omp_set_num_threads(1), true);
  (void)single_threaded;
  const sigset_t previous = defer_signals();
  const dnnl_status_t status =
      dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  restore_signals(previous);
  RT_CHECK(status == dnnl_success, "gemm: dnnl_sgemm failed with status ", int(status), " for m ",
           m, " n ", n, " k ", k);
}

void gemm(bool ta, bool tb, int m, int n, int k, double alpha, const double* a, int lda,
          const double* b, int ldb, double beta, double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
              k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace ringtrain::cpu
