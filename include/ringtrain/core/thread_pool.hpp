#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <future>
#include <mutex>
#include <queue>
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

// A fixed set of worker threads taking tasks from one queue.
class ThreadPool {
 public:
  // Throws an Error, with no thread left running, when one cannot be started.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()); }

  std::future<void> submit(std::function<void()> task);

  // Splits [0, n) into contiguous chunks, one per thread (the caller runs one), and waits for all.
  // The first exception thrown by a chunk is rethrown here.
  void parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)>& body);

 private:
  void work();
  void stop();

  std::vector<std::thread> workers_;
  std::queue<std::packaged_task<void()>> tasks_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false;
};

}  // namespace ringtrain
