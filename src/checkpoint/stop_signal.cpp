#include "ringtrain/checkpoint/stop_signal.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>

#include "ringtrain/core/atomic_file.hpp"
#include "ringtrain/core/error.hpp"

namespace ringtrain {
namespace {

// A signal may land on any thread (loader threads included): lock-free atomics only.
std::atomic<int> first_signal{0};
std::atomic<int> signal_count{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs lock-free atomics");

extern "C" void on_stop_signal(int signal) {
  int none = 0;
  first_signal.compare_exchange_strong(none, signal);
  signal_count.fetch_add(1);
}

void install(int signal) {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaddset(&action.sa_mask, SIGTERM);
  sigaddset(&action.sa_mask, SIGUSR1);
  RT_CHECK(sigaction(signal, &action, nullptr) == 0, "sigaction(", stop_signal_name(signal),
           ") failed: ", std::strerror(errno), "; training could not be stopped with a checkpoint");
}

}  // namespace

void install_stop_signal_handlers() {
  install(SIGTERM);
  install(SIGUSR1);
  // A stream output (a FIFO) whose reader stops reading never keeps the run from stopping.
  set_stream_stop_check([] { return stop_signal_received() != 0; });
}

int stop_signal_received() {
  return first_signal.load();
}

int stop_signals_received() {
  return signal_count.load();
}

const char* stop_signal_name(int signal) {
  return signal == SIGTERM ? "SIGTERM" : "SIGUSR1";
}

}  // namespace ringtrain
