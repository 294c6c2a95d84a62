#include "engine/metrics/registry.h"

#include <cassert>

#include "absl/strings/str_cat.h"
#include "engine/common/log.h"
#include "engine/metrics/internal/text_format.h"

namespace orca::metrics {
namespace {

// Returns the names a family claims: its own and those of the samples it emits.
std::vector<std::string> ClaimedNames(MetricType type, const std::string& name) {
  if (type != MetricType::kHistogram) return {name};
  return {name, name + "_bucket", name + "_sum", name + "_count"};
}

absl::Status ValidateFamily(MetricType type, const std::string& name, const std::string& help,
                            const Labels& const_labels) {
  if (!internal::IsValidMetricName(name)) {
    return absl::InvalidArgumentError(absl::StrCat("invalid metric name \"", name, "\""));
  }
  if (!internal::IsValidUtf8(help)) {
    return absl::InvalidArgumentError(absl::StrCat("help text of ", name, " is not UTF-8"));
  }
  for (const auto& [label, value] : const_labels) {
    if (!internal::IsValidLabelName(label)) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid label name \"", label, "\" on metric ", name));
    }
    if (type == MetricType::kHistogram && label == "le") {
      return absl::InvalidArgumentError(
          absl::StrCat("label \"le\" is reserved on histogram ", name));
    }
    if (!internal::IsValidUtf8(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("value of label ", label, " on metric ", name, " is not UTF-8"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<internal::FamilyBase*> Registry::AddFamily(MetricType type, const std::string& name,
                                                          const std::string& help,
                                                          const Labels& const_labels,
                                                          const FamilyFactory& make) {
  if (absl::Status s = ValidateFamily(type, name, help, const_labels); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  for (const auto& family : families_) {
    if (family->name() != name) continue;
    if (family->type() == type && family->help() == help &&
        family->const_labels() == const_labels) {
      return family.get();
    }
    return absl::AlreadyExistsError(absl::StrCat(
        "metric ", name, " is already registered with a different type, help or labels"));
  }
  const std::vector<std::string> claimed = ClaimedNames(type, name);
  for (const std::string& n : claimed) {
    if (taken_names_.count(n) != 0) {
      return absl::AlreadyExistsError(
          absl::StrCat("metric ", name, " would emit samples named ", n,
                       ", which another registered family already uses"));
    }
  }
  taken_names_.insert(claimed.begin(), claimed.end());
  families_.push_back(make());
  return families_.back().get();
}

internal::FamilyBase& Registry::AddDetached(const absl::Status& error, const FamilyFactory& make) {
  ORCA_LOG(ERROR) << "metrics: registering a family failed: " << error
                  << "; it will not be exported";
  assert(false && "metrics: invalid metric family registration (see the log)");
  absl::MutexLock lock(&mu_);
  detached_.push_back(make());
  return *detached_.back();
}

std::string Registry::Serialize() const {
  std::string out;
  absl::ReaderMutexLock lock(&mu_);
  for (const auto& family : families_) family->Serialize(&out);
  return out;
}

}  // namespace orca::metrics
