#include "engine/metrics/family.h"

#include <cassert>

#include "absl/strings/str_cat.h"
#include "engine/common/log.h"
#include "engine/metrics/internal/text_format.h"

namespace orca::metrics {
namespace internal {
namespace {

// A failed Add is a bug in the caller: loud in debug builds, logged in release ones.
void ReportFailedAdd(const std::string& family, const absl::Status& status) {
  ORCA_LOG(ERROR) << "metrics: Add on family " << family << " failed: " << status
                  << "; the series will not be exported";
  assert(false && "metrics: invalid labels passed to Family::Add (see the log)");
}

void AppendSeries(const std::string& name, const Labels& labels, const Counter& c,
                  std::string* out) {
  AppendSample(name, labels, nullptr, FormatDouble(c.Value()), out);
}

void AppendSeries(const std::string& name, const Labels& labels, const Gauge& g, std::string* out) {
  AppendSample(name, labels, nullptr, FormatDouble(g.Value()), out);
}

void AppendSeries(const std::string& name, const Labels& labels, const Histogram& h,
                  std::string* out) {
  const HistogramSnapshot s = h.Snapshot();
  const std::string bucket_name = name + "_bucket";
  for (size_t i = 0; i < s.cumulative_counts.size(); ++i) {
    const std::string le = i < s.boundaries.size() ? FormatDouble(s.boundaries[i]) : "+Inf";
    AppendSample(bucket_name, labels, &le, absl::StrCat(s.cumulative_counts[i]), out);
  }
  AppendSample(name + "_sum", labels, nullptr, FormatDouble(s.sum), out);
  AppendSample(name + "_count", labels, nullptr, absl::StrCat(s.count), out);
}

}  // namespace

void FamilyBase::Serialize(std::string* out) const {
  if (!help_.empty()) {
    absl::StrAppend(out, "# HELP ", name_, " ");
    AppendEscapedHelp(help_, out);
    out->push_back('\n');
  }
  absl::StrAppend(out, "# TYPE ", name_, " ", MetricTypeName(type_), "\n");
  AppendSamples(out);
}

absl::StatusOr<Labels> FamilyBase::MergeLabels(const Labels& labels) const {
  Labels merged = const_labels_;
  for (const auto& [label, value] : labels) {
    if (!IsValidLabelName(label)) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid label name \"", label, "\" on metric ", name_));
    }
    if (type_ == MetricType::kHistogram && label == "le") {
      return absl::InvalidArgumentError(
          absl::StrCat("label \"le\" is reserved on histogram ", name_));
    }
    if (!IsValidUtf8(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("value of label ", label, " on metric ", name_, " is not UTF-8"));
    }
    if (!merged.emplace(label, value).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("label ", label, " on metric ", name_, " repeats a constant label"));
    }
  }
  return merged;
}

}  // namespace internal

namespace {

template <typename T>
std::unique_ptr<T> MakeSeries(const BucketBoundaries* buckets) {
  if constexpr (std::is_same_v<T, Histogram>) {
    return std::make_unique<T>(*buckets);
  } else {
    return std::make_unique<T>();
  }
}

}  // namespace

template <typename T>
absl::StatusOr<T*> Family<T>::TryAddSeries(const Labels& labels, const BucketBoundaries* buckets) {
  absl::StatusOr<Labels> merged = MergeLabels(labels);
  if (!merged.ok()) return merged.status();
  if (buckets != nullptr) {
    if (absl::Status s = ValidateBucketBoundaries(*buckets); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("histogram ", name(), ": ", s.message()));
    }
  }
  absl::MutexLock lock(&mu_);
  auto it = index_.find(*merged);
  if (it != index_.end()) return it->second;
  std::unique_ptr<T> metric = MakeSeries<T>(buckets);
  T* raw = metric.get();
  index_.emplace(*merged, raw);
  series_.push_back(Series{*std::move(merged), std::move(metric)});
  return raw;
}

template <typename T>
T& Family<T>::AddSeries(const Labels& labels, const BucketBoundaries* buckets) {
  absl::StatusOr<T*> series = TryAddSeries(labels, buckets);
  if (series.ok()) return **series;
  internal::ReportFailedAdd(name(), series.status());
  absl::MutexLock lock(&mu_);
  detached_.push_back(MakeSeries<T>(buckets));
  return *detached_.back();
}

template <typename T>
size_t Family<T>::size() const {
  absl::MutexLock lock(&mu_);
  return series_.size();
}

template <typename T>
void Family<T>::AppendSamples(std::string* out) const {
  absl::MutexLock lock(&mu_);
  for (const Series& s : series_) internal::AppendSeries(name(), s.labels, *s.metric, out);
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

}  // namespace orca::metrics
