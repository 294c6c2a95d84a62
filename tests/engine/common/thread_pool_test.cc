// ThreadPool: every index of every loop runs exactly once and ParallelFor returns only
// after all of them, over thousands of back-to-back loops (the spinning hand-off a
// decode iteration uses), loops with pauses between them longer than the spin (the
// workers fall asleep and are woken), slow chunks, and a pool of one thread.
#include "engine/common/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace orca {
namespace {

void CheckLoops(ThreadPool& pool, int loops, std::chrono::microseconds pause_between) {
  std::vector<std::atomic<int>> hits(64);
  for (int loop = 0; loop < loops; ++loop) {
    const int64_t n = 1 + loop % 40;
    for (int64_t i = 0; i < n; ++i) hits[i].store(0);
    pool.ParallelFor(n, [&](int64_t i) {
      if (i == n - 1 && loop % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
      hits[i].fetch_add(1);
    });
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(hits[i].load(), 1) << "loop " << loop << " index " << i << " of " << n;
    }
    if (pause_between.count() > 0) std::this_thread::sleep_for(pause_between);
  }
}

TEST(ThreadPoolTest, BackToBackLoopsRunEveryIndexOnceAndWaitForAll) {
  ThreadPool pool(3);
  CheckLoops(pool, 3000, std::chrono::microseconds(0));
}

TEST(ThreadPoolTest, LoopsAfterTheWorkersSleptStillRunEveryIndex) {
  ThreadPool pool(2);
  CheckLoops(pool, 100, std::chrono::microseconds(ThreadPool::kSpinMicros * 4));
}

TEST(ThreadPoolTest, OneThreadRunsOnTheCaller) {
  ThreadPool pool(1);
  EXPECT_EQ(pool.num_threads(), 1);
  CheckLoops(pool, 50, std::chrono::microseconds(0));
}

}  // namespace
}  // namespace orca
