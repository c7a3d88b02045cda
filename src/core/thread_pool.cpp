#include "ringtrain/core/thread_pool.hpp"

#include <algorithm>
#include <exception>

namespace ringtrain {

ThreadPool::ThreadPool(int threads) {
  const int n = std::max(threads, 0);
  try {
    for (int i = 0; i < n; ++i)
      workers_.push_back(start_thread("compute", i, n, [this] { work(); }));
  } catch (...) {
    stop();
    throw;
  }
}

ThreadPool::~ThreadPool() {
  stop();
}

void ThreadPool::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& w : workers_) w.join();
}

std::future<void> ThreadPool::submit(std::function<void()> task) {
  std::packaged_task<void()> packaged(std::move(task));
  std::future<void> done = packaged.get_future();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tasks_.push(std::move(packaged));
  }
  cv_.notify_one();
  return done;
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& body) {
  if (n <= 0) return;
  const int64_t chunks = std::min<int64_t>(n, size() + 1);
  if (chunks == 1) {
    body(0, n);
    return;
  }
  auto range = [&](int64_t i) { return std::make_pair(n * i / chunks, n * (i + 1) / chunks); };
  std::vector<std::future<void>> pending;
  for (int64_t i = 1; i < chunks; ++i) {
    auto [b, e] = range(i);
    pending.push_back(submit([&body, b = b, e = e] { body(b, e); }));
  }
  // Wait for every chunk even when one throws: the tasks reference `body`.
  std::exception_ptr first;
  auto [b0, e0] = range(0);
  try {
    body(b0, e0);
  } catch (...) {
    first = std::current_exception();
  }
  for (auto& f : pending) {
    try {
      f.get();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

void ThreadPool::work() {
  for (;;) {
    std::packaged_task<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (stopping_ && tasks_.empty()) return;
      task = std::move(tasks_.front());
      tasks_.pop();
    }
    task();
  }
}

}  // namespace ringtrain
