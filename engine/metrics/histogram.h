// Histogram: counts observations (latencies, batch sizes) into buckets, exposed with
// TYPE histogram as cumulative `_bucket{le="b"}` series (each counts observations
// <= b; the last bucket is le="+Inf"), plus `_sum` and `_count`.
//
// Thread-safe: Observe takes a per-histogram mutex for a few instructions, so the
// scheduler may observe every iteration; Snapshot is consistent (+Inf bucket ==
// count). Owned by its Family; never copied.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "engine/metrics/labels.h"

namespace orca::metrics {

// The finite upper bounds of a histogram's buckets, strictly increasing. The +Inf
// bucket is implicit and must not be listed.
using BucketBoundaries = std::vector<double>;

// Returns `count` bounds start, start*factor, start*factor^2, ... Requires start > 0,
// factor > 1 and count >= 1; returns an empty list (after a debug assertion)
// otherwise.
BucketBoundaries ExponentialBuckets(double start, double factor, int count);
// Returns `count` bounds start, start+width, start+2*width, ... Requires width > 0
// and count >= 1; returns an empty list (after a debug assertion) otherwise.
BucketBoundaries LinearBuckets(double start, double width, int count);
// Returns OK when `boundaries` are finite and strictly increasing, else
// InvalidArgument naming the offending bound.
absl::Status ValidateBucketBoundaries(const BucketBoundaries& boundaries);

// A consistent copy of a histogram's state.
struct HistogramSnapshot {
  BucketBoundaries boundaries;
  // cumulative_counts[i] counts observations <= boundaries[i]; the extra last entry
  // is the +Inf bucket and equals `count`.
  std::vector<uint64_t> cumulative_counts;
  double sum = 0.0;
  uint64_t count = 0;
};

class Histogram {
 public:
  static constexpr MetricType kType = MetricType::kHistogram;

  // Creates an empty histogram with the given finite bucket bounds (see
  // ValidateBucketBoundaries). Bounds that are not so are repaired rather than
  // trusted: sorted, deduplicated, non-finite ones dropped.
  explicit Histogram(BucketBoundaries boundaries);
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  // Records `value` in the first bucket whose bound is >= value (bounds are
  // inclusive) and adds it to the sum. NaN lands in the +Inf bucket only.
  void Observe(double value);

  // Returns a consistent copy of the buckets, sum and count.
  HistogramSnapshot Snapshot() const;

  const BucketBoundaries& boundaries() const { return boundaries_; }

 private:
  const BucketBoundaries boundaries_;
  mutable absl::Mutex mu_;
  // Non-cumulative: counts_[i] counts (boundaries_[i-1], boundaries_[i]]; the last
  // entry counts values above every bound (and NaN).
  std::vector<uint64_t> counts_ ABSL_GUARDED_BY(mu_);
  double sum_ ABSL_GUARDED_BY(mu_) = 0.0;
};

}  // namespace orca::metrics
