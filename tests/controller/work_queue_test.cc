#include "controller/reconcile/work_queue.h"

#include <gtest/gtest.h>

#include <thread>

namespace orca::controller {
namespace {

TEST(WorkQueueTest, DeduplicatesQueuedKeys) {
  WorkQueue q;
  q.Add("a");
  q.Add("a");
  q.Add("b");
  EXPECT_EQ(q.Len(), 2u);
  EXPECT_EQ(*q.Get(), "a");
  EXPECT_EQ(*q.Get(), "b");
  EXPECT_EQ(q.Len(), 0u);
}

TEST(WorkQueueTest, KeyAddedWhileProcessingIsRequeuedOnDone) {
  WorkQueue q;
  q.Add("a");
  std::string key = *q.Get();
  q.Add("a");  // an event arrives while "a" is reconciled
  EXPECT_EQ(q.Len(), 0u) << "never handed to two workers at once";
  q.Done(key);
  EXPECT_EQ(q.Len(), 1u);
  EXPECT_EQ(*q.Get(), "a");
}

TEST(WorkQueueTest, DelayedKeysArriveAfterTheirDelay) {
  WorkQueue q;
  q.AddAfter("late", absl::Milliseconds(30));
  q.AddAfter("late", absl::Hours(1));  // an earlier pending delay wins
  EXPECT_EQ(q.Delayed(), 1u);
  EXPECT_EQ(q.Len(), 0u);
  EXPECT_EQ(*q.Get(), "late");  // blocks until due
}

TEST(WorkQueueTest, RateLimitBacksOffUntilForget) {
  WorkQueue q(BackoffPolicy{absl::Milliseconds(10), absl::Seconds(1), 2.0, 0.0});
  EXPECT_EQ(q.AddRateLimited("k"), absl::Milliseconds(10));
  EXPECT_EQ(q.AddRateLimited("k"), absl::Milliseconds(20));
  EXPECT_EQ(q.AddRateLimited("k"), absl::Milliseconds(40));
  q.Forget("k");
  EXPECT_EQ(q.AddRateLimited("k"), absl::Milliseconds(10));
}

TEST(WorkQueueTest, ShutDownWakesWaiters) {
  WorkQueue q;
  std::thread t([&] { EXPECT_FALSE(q.Get().has_value()); });
  absl::SleepFor(absl::Milliseconds(10));
  q.ShutDown();
  t.join();
  q.Add("x");
  EXPECT_EQ(q.Len(), 0u);
}

TEST(BackoffTest, JitterStaysInBoundsAndCaps) {
  Backoff b(BackoffPolicy{absl::Milliseconds(100), absl::Seconds(1), 2.0, 0.2}, 42);
  for (int i = 0; i < 20; ++i) {
    absl::Duration d = b.Next();
    double base = std::min(0.1 * (1 << std::min(i, 10)), 1.0);
    EXPECT_GE(absl::ToDoubleSeconds(d), base * 0.8 - 1e-9) << i;
    EXPECT_LE(absl::ToDoubleSeconds(d), std::min(base * 1.2, 1.0) + 1e-9) << i;
  }
}

}  // namespace
}  // namespace orca::controller
