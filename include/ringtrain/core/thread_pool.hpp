#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "ringtrain/core/error.hpp"

namespace ringtrain {

// "cannot start <what> thread <index + 1> of <count>: <reason> (ulimit -u?)": what a refused
// thread start (too many processes and threads for this user) is reported as.
inline Error thread_start_error(const char* what, int index, int count,
                                const std::system_error& e) {
  return Error(str_cat("cannot start ", what, " thread ", index + 1, " of ", count, ": ",
                       e.code().message(), " (ulimit -u?)"));
}

// Starts thread `index` (0-based) of `count` named `what`; throws thread_start_error when the
// system refuses it. The caller joins the threads it already started.
template <class F>
std::thread start_thread(const char* what, int index, int count, F&& body) {
  try {
    return std::thread(std::forward<F>(body));
  } catch (const std::system_error& e) {
    throw thread_start_error(what, index, count, e);
  }
}

// A fixed set of worker threads that run the chunks of one parallel_for at a time.
//
// Note: the CPU backend calls parallel_for a few hundred times per training step, some on
// small tensors, so the hand-over is what costs: waking a sleeping thread through the kernel
// took about 50 us per call on a virtualised 2-core machine. A worker that has just finished
// therefore spins for a short while (kSpin) waiting for the next call before it sleeps, and the
// caller spins the same way waiting for the workers, so that back-to-back ops hand over without
// waking a thread; idle for longer, every thread sleeps. The spin yields the core every few
// microseconds: with more threads than cores (ranks oversubscribing a node) a pure spin held
// cores that other processes' threads were waiting for (6% slower, two 2-thread processes on 2
// cores; with the yield as fast as the sleeping pool).
class ThreadPool {
 public:
  // Throws an Error, with no thread left running, when one cannot be started.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()); }

  // Splits [0, n) into contiguous chunks, one per thread (the caller runs one), and waits for all.
  // The first exception thrown by a chunk is rethrown here, after every chunk has ended. Calls
  // from several threads take turns; a call from inside a chunk runs the whole range inline.
  void parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)>& body);

 private:
  using Body = std::function<void(int64_t, int64_t)>;
  struct Job {
    const Body* body = nullptr;
    int64_t n = 0, chunks = 0;
  };
  void work(int chunk);
  void run_chunk(const Job& job, int64_t chunk);
  void stop();

  std::vector<std::thread> workers_;
  std::mutex call_mutex_;  // one parallel_for at a time
  std::mutex mutex_;       // guards job_, error_ and stopping_, and changes of generation_
  std::condition_variable wake_, done_;
  Job job_;
  std::exception_ptr error_;             // the first exception of the current job
  std::atomic<uint64_t> generation_{0};  // counts the jobs (and the stop); workers watch it
  std::atomic<int64_t> remaining_{0};    // the workers' chunks of the current job not yet done
  bool stopping_ = false;
};

}  // namespace ringtrain
