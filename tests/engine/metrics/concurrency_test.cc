// Many threads updating the same series must lose nothing, while scrapes run.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "engine/metrics/metrics.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace orca::metrics {
namespace {

using ::testing::ElementsAre;

constexpr int kThreads = 8;
constexpr int kIterations = 50000;

TEST(ConcurrencyTest, ParallelUpdatesGiveExactTotals) {
  Registry registry;
  auto& counters = BuildCounter().Name("c_total").Register(registry);
  auto& gauges = BuildGauge().Name("g").Register(registry);
  auto& histograms = BuildHistogram().Name("h").Register(registry);

  std::atomic<bool> done{false};
  std::thread scraper([&] {
    while (!done.load()) {
      const std::string text = registry.Serialize();
      ASSERT_FALSE(text.empty());
    }
  });
  std::vector<std::thread> workers;
  workers.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      // Every thread looks its series up itself: Add must hand out the same ones.
      Counter& c = counters.Add({{"k", "shared"}});
      Gauge& g = gauges.Add({});
      Histogram& h = histograms.Add({}, {1, 2});
      Counter& own = counters.Add({{"k", "thread" + std::to_string(t)}});
      for (int i = 0; i < kIterations; ++i) {
        c.Increment();
        own.Increment(2);
        g.Increment(3);
        g.Decrement(1);
        h.Observe(i % 3);  // 0, 1 -> le=1; 2 -> le=2
      }
    });
  }
  for (std::thread& w : workers) w.join();
  done = true;
  scraper.join();

  EXPECT_EQ(counters.Add({{"k", "shared"}}).Value(), kThreads * kIterations);
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(counters.Add({{"k", "thread" + std::to_string(t)}}).Value(), 2.0 * kIterations);
  }
  EXPECT_EQ(counters.size(), kThreads + 1u);
  EXPECT_EQ(gauges.Add({}).Value(), 2.0 * kThreads * kIterations);

  const HistogramSnapshot s = histograms.Add({}, {1, 2}).Snapshot();
  const uint64_t total = uint64_t{kThreads} * kIterations;
  uint64_t twos = 0;
  double sum = 0;
  for (int i = 0; i < kIterations; ++i) {
    twos += (i % 3 == 2);
    sum += i % 3;
  }
  twos *= kThreads;
  EXPECT_THAT(s.cumulative_counts, ElementsAre(total - twos, total, total));
  EXPECT_EQ(s.count, total);
  // Every observation is a small integer, so the double sum is exact.
  EXPECT_EQ(s.sum, sum * kThreads);
}

}  // namespace
}  // namespace orca::metrics
