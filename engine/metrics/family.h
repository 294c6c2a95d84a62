// Family<T>: one metric name (with its help text, type and constant labels) and the
// time series under it, one T (Counter, Gauge or Histogram) per distinct label set.
// Families are created by a Registry (usually through a Builder, see builder.h) and
// owned by it; references to a family and to its series stay valid for the
// registry's lifetime (series are never removed).
//
// Thread-safe: Add and Serialize may run concurrently from any thread. Add takes the
// family's mutex and validates labels, so hot paths should keep the returned
// reference rather than call Add every iteration.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "engine/metrics/counter.h"
#include "engine/metrics/gauge.h"
#include "engine/metrics/histogram.h"
#include "engine/metrics/labels.h"

namespace orca::metrics {
namespace internal {

// The type-independent half of a family: identity, label validation and the HELP
// and TYPE lines.
class FamilyBase {
 public:
  FamilyBase(MetricType type, std::string name, std::string help, Labels const_labels)
      : type_(type),
        name_(std::move(name)),
        help_(std::move(help)),
        const_labels_(std::move(const_labels)) {}
  virtual ~FamilyBase() = default;
  FamilyBase(const FamilyBase&) = delete;
  FamilyBase& operator=(const FamilyBase&) = delete;

  MetricType type() const { return type_; }
  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  const Labels& const_labels() const { return const_labels_; }

  // Appends the family in text format 0.0.4: HELP (when there is help text), TYPE,
  // then every series' samples in creation order.
  void Serialize(std::string* out) const;

 protected:
  // Returns `labels` merged with the constant labels, or InvalidArgument when a label
  // name is invalid, reserved ("le" for histograms) or repeats a constant label, or
  // a value is not UTF-8.
  absl::StatusOr<Labels> MergeLabels(const Labels& labels) const;
  // Appends the sample lines of every series.
  virtual void AppendSamples(std::string* out) const = 0;

 private:
  const MetricType type_;
  const std::string name_;
  const std::string help_;
  const Labels const_labels_;
};

}  // namespace internal

template <typename T>
class Family final : public internal::FamilyBase {
  static_assert(std::is_same_v<T, Counter> || std::is_same_v<T, Gauge> ||
                    std::is_same_v<T, Histogram>,
                "Family<T> supports Counter, Gauge and Histogram");

 public:
  // Creates an empty family. Use Registry::Add or a Builder rather than this: they
  // validate the name and labels.
  Family(std::string name, std::string help, Labels const_labels)
      : FamilyBase(T::kType, std::move(name), std::move(help), std::move(const_labels)) {}

  // Returns the series with `labels` (merged with the family's constant labels),
  // creating it on first use; the same label set always yields the same series.
  // Fails with InvalidArgument on a bad label (see MergeLabels) and, for histograms,
  // on bad `buckets`, which are used only when the series is created.
  absl::StatusOr<T*> TryAdd(const Labels& labels) requires(!std::is_same_v<T, Histogram>) {
    return TryAddSeries(labels, nullptr);
  }
  absl::StatusOr<T*> TryAdd(const Labels& labels,
                            const BucketBoundaries& buckets) requires std::is_same_v<T, Histogram> {
    return TryAddSeries(labels, &buckets);
  }

  // Like TryAdd, but a failure is a programming error: it asserts in debug builds,
  // and in release builds logs the error and returns a detached series that works
  // but is never exported.
  T& Add(const Labels& labels) requires(!std::is_same_v<T, Histogram>) {
    return AddSeries(labels, nullptr);
  }
  T& Add(const Labels& labels,
         const BucketBoundaries& buckets) requires std::is_same_v<T, Histogram> {
    return AddSeries(labels, &buckets);
  }

  // Returns the number of exported series.
  size_t size() const;

 private:
  struct Series {
    Labels labels;  // merged with the constant labels
    std::unique_ptr<T> metric;
  };

  // The bodies of TryAdd and Add; `buckets` is non-null exactly for histograms.
  absl::StatusOr<T*> TryAddSeries(const Labels& labels, const BucketBoundaries* buckets);
  T& AddSeries(const Labels& labels, const BucketBoundaries* buckets);
  void AppendSamples(std::string* out) const override;

  mutable absl::Mutex mu_;
  std::vector<Series> series_ ABSL_GUARDED_BY(mu_);  // creation order
  std::map<Labels, T*> index_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<T>> detached_ ABSL_GUARDED_BY(mu_);
};

extern template class Family<Counter>;
extern template class Family<Gauge>;
extern template class Family<Histogram>;

}  // namespace orca::metrics
