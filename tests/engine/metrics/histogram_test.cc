// Histogram semantics as Prometheus defines them: cumulative buckets whose upper
// bounds are inclusive, an implicit +Inf bucket equal to _count, and _sum.
#include "engine/metrics/histogram.h"

#include <cmath>
#include <limits>
#include <vector>

#include "engine/metrics/metrics.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace orca::metrics {
namespace {

using ::testing::ElementsAre;

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(HistogramTest, BucketsAreCumulativeWithInclusiveUpperBounds) {
  Histogram h({1, 2, 5});
  for (double v : {-3.0, 0.5, 1.0, std::nextafter(1.0, 2.0), 2.0, 4.0, 5.0, 5.5, kInf}) {
    h.Observe(v);
  }
  const HistogramSnapshot s = h.Snapshot();
  EXPECT_THAT(s.boundaries, ElementsAre(1, 2, 5));
  // <=1: -3, 0.5, 1   <=2: +1.0000001, 2   <=5: +4, 5   +Inf: +5.5, +inf
  EXPECT_THAT(s.cumulative_counts, ElementsAre(3, 5, 7, 9));
  EXPECT_EQ(s.count, 9u);
  EXPECT_EQ(s.sum, kInf);
}

TEST(HistogramTest, SumAddsObservations) {
  Histogram h({0.25, 0.5});
  for (double v : {0.125, 0.25, 0.375, 2.0}) h.Observe(v);
  const HistogramSnapshot s = h.Snapshot();
  EXPECT_EQ(s.sum, 2.75);
  EXPECT_THAT(s.cumulative_counts, ElementsAre(2, 3, 4));
}

TEST(HistogramTest, NanCountsOnlyInInfBucket) {
  Histogram h({1});
  h.Observe(std::nan(""));
  const HistogramSnapshot s = h.Snapshot();
  EXPECT_THAT(s.cumulative_counts, ElementsAre(0, 1));
  EXPECT_TRUE(std::isnan(s.sum));
}

TEST(HistogramTest, EmptyBoundariesLeaveOnlyInfBucket) {
  Histogram h({});
  h.Observe(7);
  EXPECT_THAT(h.Snapshot().cumulative_counts, ElementsAre(1));
}

TEST(HistogramTest, RepairsBadBoundariesInConstructor) {
  Histogram h({5, 1, kInf, 1, std::nan("")});
  EXPECT_THAT(h.boundaries(), ElementsAre(1, 5));
}

TEST(HistogramTest, ValidatesBoundaries) {
  EXPECT_TRUE(ValidateBucketBoundaries({}).ok());
  EXPECT_TRUE(ValidateBucketBoundaries({-1, 0, 0.5}).ok());
  EXPECT_FALSE(ValidateBucketBoundaries({1, 1}).ok());
  EXPECT_FALSE(ValidateBucketBoundaries({2, 1}).ok());
  EXPECT_FALSE(ValidateBucketBoundaries({1, kInf}).ok());
  EXPECT_FALSE(ValidateBucketBoundaries({std::nan("")}).ok());
}

TEST(HistogramTest, BuildsExponentialAndLinearBuckets) {
  EXPECT_THAT(ExponentialBuckets(0.001, 2, 4), ElementsAre(0.001, 0.002, 0.004, 0.008));
  EXPECT_THAT(ExponentialBuckets(1, 10, 3), ElementsAre(1, 10, 100));
  EXPECT_THAT(LinearBuckets(0, 0.5, 3), ElementsAre(0, 0.5, 1));
  // start + i * width: the tenth bound is exactly 1 + 9 * 0.1, not a drifted sum.
  EXPECT_EQ(LinearBuckets(1, 0.1, 10).back(), 1 + 9 * 0.1);
  EXPECT_TRUE(ValidateBucketBoundaries(ExponentialBuckets(1e-4, 1.5, 40)).ok());
}

TEST(HistogramTest, ExposesBucketsSumAndCount) {
  Registry registry;
  auto& family = BuildHistogram().Name("h_seconds").Help("H.").Register(registry);
  Histogram& h = family.Add({{"k", "v"}}, {0.125, 1});
  h.Observe(0.125);
  h.Observe(0.5);
  h.Observe(3);
  EXPECT_EQ(registry.Serialize(),
            "# HELP h_seconds H.\n"
            "# TYPE h_seconds histogram\n"
            "h_seconds_bucket{k=\"v\",le=\"0.125\"} 1\n"
            "h_seconds_bucket{k=\"v\",le=\"1\"} 2\n"
            "h_seconds_bucket{k=\"v\",le=\"+Inf\"} 3\n"
            "h_seconds_sum{k=\"v\"} 3.625\n"
            "h_seconds_count{k=\"v\"} 3\n");
}

}  // namespace
}  // namespace orca::metrics
