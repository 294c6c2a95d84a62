#include "engine/metrics/histogram.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"

namespace orca::metrics {
namespace {

BucketBoundaries Sanitize(BucketBoundaries b) {
  b.erase(std::remove_if(b.begin(), b.end(), [](double v) { return !std::isfinite(v); }), b.end());
  std::sort(b.begin(), b.end());
  b.erase(std::unique(b.begin(), b.end()), b.end());
  return b;
}

}  // namespace

BucketBoundaries ExponentialBuckets(double start, double factor, int count) {
  const bool ok = start > 0 && factor > 1 && count >= 1;
  assert(ok && "ExponentialBuckets needs start > 0, factor > 1, count >= 1");
  if (!ok) return {};
  BucketBoundaries b;
  b.reserve(count);
  double bound = start;
  for (int i = 0; i < count; ++i) {
    b.push_back(bound);
    bound *= factor;
  }
  return b;
}

BucketBoundaries LinearBuckets(double start, double width, int count) {
  const bool ok = width > 0 && count >= 1;
  assert(ok && "LinearBuckets needs width > 0, count >= 1");
  if (!ok) return {};
  BucketBoundaries b;
  b.reserve(count);
  // start + i * width rather than a running sum: no accumulated rounding error.
  for (int i = 0; i < count; ++i) b.push_back(start + i * width);
  return b;
}

absl::Status ValidateBucketBoundaries(const BucketBoundaries& boundaries) {
  for (size_t i = 0; i < boundaries.size(); ++i) {
    if (!std::isfinite(boundaries[i])) {
      return absl::InvalidArgumentError(absl::StrCat("bucket bound ", i, " is ", boundaries[i],
                                                     "; bounds must be finite (+Inf is implicit)"));
    }
    if (i > 0 && !(boundaries[i] > boundaries[i - 1])) {
      return absl::InvalidArgumentError(absl::StrCat("bucket bounds must be strictly increasing: ",
                                                     boundaries[i - 1], " then ", boundaries[i]));
    }
  }
  return absl::OkStatus();
}

Histogram::Histogram(BucketBoundaries boundaries)
    : boundaries_(Sanitize(std::move(boundaries))), counts_(boundaries_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  // The bounds never change, so the bucket is found outside the lock.
  size_t bucket = boundaries_.size();
  if (!std::isnan(value)) {
    bucket = std::lower_bound(boundaries_.begin(), boundaries_.end(), value) - boundaries_.begin();
  }
  absl::MutexLock lock(&mu_);
  ++counts_[bucket];
  sum_ += value;
}

HistogramSnapshot Histogram::Snapshot() const {
  HistogramSnapshot s;
  s.boundaries = boundaries_;
  s.cumulative_counts.reserve(boundaries_.size() + 1);
  absl::MutexLock lock(&mu_);
  uint64_t running = 0;
  for (uint64_t c : counts_) {
    running += c;
    s.cumulative_counts.push_back(running);
  }
  s.count = running;
  s.sum = sum_;
  return s;
}

}  // namespace orca::metrics
