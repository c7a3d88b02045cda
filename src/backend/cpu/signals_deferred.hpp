#pragma once
// Running oneDNN's kernels with the asynchronous signals held back until they return.
#include <csignal>

namespace ringtrain::cpu {

// Note: oneDNN's JIT GEMM kernels (AVX2 and AVX-512, up to oneDNN 3.11.1; Debian ships 2.6)
// point the stack pointer at their heap workspace while they run, and its gemm-based
// convolutions call the same kernels. A signal delivered to the thread then has its frame pushed
// there by the kernel and overwrites the heap: a run stopped with SIGUSR1 or SIGTERM, or watched
// by a sampling profiler, died with "corrupted size vs. prev_size" instead of writing its
// checkpoint. So every call into oneDNN blocks the asynchronous signals on the calling thread
// and delivers them when it returns, at most milliseconds later. Faults (SIGSEGV, SIGBUS,
// SIGFPE, SIGILL, SIGTRAP, SIGABRT) stay unblocked so that a crash still reports itself.
// The backend runs oneDNN single-threaded on each thread of its pool, and each thread defers its
// own signals. Were a primitive run with several OpenMP threads, its workers would be created by
// the first parallel region, from inside the execution and so while the caller's signals are
// blocked: they would inherit the blocked mask for their whole life.

// Blocks the asynchronous signals on this thread for `call`; returns the mask to restore.
sigset_t defer_signals(const char* call);
void restore_signals(const sigset_t& previous, const char* call);

// Runs f() with the asynchronous signals deferred, restoring the mask also when f throws.
template <class F>
void with_signals_deferred(const char* call, F&& f) {
  const sigset_t previous = defer_signals(call);
  try {
    f();
  } catch (...) {
    restore_signals(previous, call);
    throw;
  }
  restore_signals(previous, call);
}

}  // namespace ringtrain::cpu
