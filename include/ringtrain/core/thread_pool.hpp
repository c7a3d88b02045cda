#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <future>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

namespace ringtrain {

// A fixed set of worker threads taking tasks from one queue.
class ThreadPool {
 public:
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

  std::vector<std::thread> workers_;
  std::queue<std::packaged_task<void()>> tasks_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false;
};

}  // namespace ringtrain
