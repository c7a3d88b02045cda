#include "ringtrain/core/thread_pool.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

namespace ringtrain {
namespace {

// How long a thread spins for the next job (a worker) or for the workers (the caller) before it
// sleeps: longer than the gap between two ops of a training step, short against any idle time.
constexpr auto kSpin = std::chrono::microseconds(50);

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// Spins until done() returns true (then true) or for kSpin (then done()).
template <class F>
bool spin_until(F&& done) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  do {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    std::this_thread::yield();  // to another process's thread, when the cores are oversubscribed
  } while (std::chrono::steady_clock::now() < until);
  return done();
}

// The pool whose chunk this thread is running: a parallel_for from inside one runs inline.
thread_local const ThreadPool* running_chunk_of = nullptr;

}  // namespace

ThreadPool::ThreadPool(int threads) {
  const int n = std::max(threads, 0);
  try {
    for (int i = 0; i < n; ++i)
      workers_.push_back(start_thread("compute", i, n, [this, i] { work(i + 1); }));
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
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::run_chunk(const Job& job, int64_t chunk) {
  try {
    (*job.body)(job.n * chunk / job.chunks, job.n * (chunk + 1) / job.chunks);
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_) error_ = std::current_exception();
  }
}

void ThreadPool::parallel_for(int64_t n, const Body& body) {
  if (n <= 0) return;
  const int64_t chunks = std::min<int64_t>(n, size() + 1);
  if (chunks == 1 || running_chunk_of == this) {
    body(0, n);
    return;
  }
  std::lock_guard<std::mutex> call(call_mutex_);
  const Job job{&body, n, chunks};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = job;
    remaining_.store(chunks - 1, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  const ThreadPool* outer = std::exchange(running_chunk_of, this);
  run_chunk(job, 0);
  running_chunk_of = outer;
  const auto done = [this] { return remaining_.load(std::memory_order_acquire) == 0; };
  if (!spin_until(done)) {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, done);
  }
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    error = std::exchange(error_, nullptr);
  }
  if (error) std::rethrow_exception(error);
}

// Worker `chunk` (1 to size()) runs that chunk of every job that has one.
void ThreadPool::work(int chunk) {
  running_chunk_of = this;
  uint64_t seen = 0;
  for (;;) {
    const auto changed = [&] { return generation_.load(std::memory_order_acquire) != seen; };
    if (!spin_until(changed)) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, changed);
    }
    Job job;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;
      seen = generation_.load(std::memory_order_relaxed);
      job = job_;
    }
    if (chunk >= job.chunks) continue;
    run_chunk(job, chunk);
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mutex_);
      done_.notify_one();
    }
  }
}

}  // namespace ringtrain
