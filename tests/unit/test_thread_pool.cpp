// The thread pool: every index visited once, exceptions reach the caller after all chunks end.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
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

TEST(ThreadPool, SubmitRunsTasks) {
  ThreadPool pool(1);
  std::atomic<int> n{0};
  std::vector<std::future<void>> f;
  for (int i = 0; i < 10; ++i) f.push_back(pool.submit([&] { ++n; }));
  for (auto& x : f) x.get();
  EXPECT_EQ(n.load(), 10);
}

}  // namespace
}  // namespace ringtrain
