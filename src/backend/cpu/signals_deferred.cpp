#include "signals_deferred.hpp"

#include <pthread.h>

#include <cstring>

#include "ringtrain/core/error.hpp"

namespace ringtrain::cpu {
namespace {

sigset_t asynchronous_signals() {
  sigset_t set;
  sigfillset(&set);
  for (const int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT})
    sigdelset(&set, fault);
  return set;
}

}  // namespace

sigset_t defer_signals(const char* call) {
  static const sigset_t deferred = asynchronous_signals();
  sigset_t previous;
  const int code = pthread_sigmask(SIG_BLOCK, &deferred, &previous);
  RT_CHECK(code == 0, call, ": pthread_sigmask(SIG_BLOCK) failed: ", std::strerror(code),
           "; a signal during oneDNN's kernels would corrupt their workspace");
  return previous;
}

void restore_signals(const sigset_t& previous, const char* call) {
  const int code = pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  RT_CHECK(code == 0, call, ": pthread_sigmask(SIG_SETMASK) failed: ", std::strerror(code),
           "; this thread would no longer see stop signals");
}

}  // namespace ringtrain::cpu
