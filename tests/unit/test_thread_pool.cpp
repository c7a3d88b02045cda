// The thread pool: every index visited once, exceptions reach the caller after all chunks end,
// hand-overs spinning or asleep, nested calls and calls from several threads.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "ringtrain/core/thread_pool.hpp"

namespace ringtrain {
namespace {

TEST(ThreadPool, ParallelForVisitsEveryIndexOnce) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> hits(1001);
  pool.parallel_for(1001, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) ++hits[static_cast<size_t>(i)];
  });
  for (const auto& h : hits) ASSERT_EQ(h.load(), 1);
}

TEST(ThreadPool, ExceptionIsRethrownAfterEveryChunkFinished) {
  ThreadPool pool(2);
  std::atomic<int> finished{0};
  EXPECT_THROW(pool.parallel_for(3,
                                 [&](int64_t b, int64_t) {
                                   if (b == 0) throw std::runtime_error("chunk 0");
                                   ++finished;
                                 }),
               std::runtime_error);
  EXPECT_EQ(finished.load(), 2);
}

// Back-to-back calls (handed over while the workers spin) and calls after a pause longer than
// the spin (the workers asleep): every chunk of every call runs exactly once.
TEST(ThreadPool, BackToBackAndSpacedCallsRunEveryChunkOnce) {
  ThreadPool pool(2);
  std::atomic<int64_t> sum{0};
  int64_t want = 0;
  for (int call = 0; call < 3000; ++call) {
    const int64_t n = 1 + call % 5;
    pool.parallel_for(n, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) sum += i + 1;
    });
    want += n * (n + 1) / 2;
    if (call % 500 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(sum.load(), want);
}

// A parallel_for from inside a chunk runs its range inline instead of waiting for itself.
TEST(ThreadPool, NestedCallRunsInline) {
  ThreadPool pool(2);
  std::vector<std::atomic<int>> hits(3 * 10);
  pool.parallel_for(3, [&](int64_t b, int64_t e) {
    for (int64_t outer = b; outer < e; ++outer)
      pool.parallel_for(10, [&](int64_t ib, int64_t ie) {
        for (int64_t i = ib; i < ie; ++i) ++hits[static_cast<size_t>(outer * 10 + i)];
      });
  });
  for (const auto& h : hits) ASSERT_EQ(h.load(), 1);
}

// Calls from several threads take turns; none loses or repeats a chunk.
TEST(ThreadPool, CallsFromSeveralThreadsTakeTurns) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&] {
      for (int call = 0; call < 200; ++call)
        pool.parallel_for(7, [&](int64_t b, int64_t e) { total += e - b; });
    });
  }
  for (auto& c : callers) c.join();
  EXPECT_EQ(total.load(), 4 * 200 * 7);
}

}  // namespace
}  // namespace ringtrain
