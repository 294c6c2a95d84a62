// Registry: the set of metric families one process exposes, and their rendering in
// the Prometheus text exposition format 0.0.4 for a /metrics endpoint.
//
// Thread-safe: families may be added and the registry serialized concurrently from
// any thread. The registry owns its families (and they their series); references
// handed out stay valid until the registry is destroyed.
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "engine/metrics/family.h"
#include "engine/metrics/labels.h"

namespace orca::metrics {

// The Content-Type of Registry::Serialize's output.
inline constexpr char kTextContentType[] = "text/plain; version=0.0.4; charset=utf-8";

class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Registers a family of T named `name`, or returns the existing one when a family
  // of the same name, type, help and constant labels exists. Fails with
  // InvalidArgument on an invalid metric or label name or non-UTF-8 text, and with
  // AlreadyExists when the name (or, for histograms, a _bucket/_sum/_count sample
  // name) is taken by a different family. The registry owns the family.
  template <typename T>
  absl::StatusOr<Family<T>*> TryAdd(std::string name, std::string help, Labels const_labels);

  // Like TryAdd, but a failure is a programming error: it asserts in debug builds,
  // and in release builds logs the error and returns a detached family that works
  // but is never exported.
  template <typename T>
  Family<T>& Add(std::string name, std::string help, Labels const_labels);

  // Returns every family in text format 0.0.4: families in registration order,
  // series in creation order, each line ending in '\n'.
  std::string Serialize() const;

 private:
  using FamilyFactory = std::function<std::unique_ptr<internal::FamilyBase>()>;

  absl::StatusOr<internal::FamilyBase*> AddFamily(MetricType type, const std::string& name,
                                                  const std::string& help,
                                                  const Labels& const_labels,
                                                  const FamilyFactory& make);
  internal::FamilyBase& AddDetached(const absl::Status& error, const FamilyFactory& make);

  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<internal::FamilyBase>> families_ ABSL_GUARDED_BY(mu_);
  // Family names plus the sample names each family emits (histogram suffixes).
  std::set<std::string, std::less<>> taken_names_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<internal::FamilyBase>> detached_ ABSL_GUARDED_BY(mu_);
};

template <typename T>
absl::StatusOr<Family<T>*> Registry::TryAdd(std::string name, std::string help,
                                            Labels const_labels) {
  const FamilyFactory make = [&] { return std::make_unique<Family<T>>(name, help, const_labels); };
  absl::StatusOr<internal::FamilyBase*> family =
      AddFamily(T::kType, name, help, const_labels, make);
  if (!family.ok()) return family.status();
  return static_cast<Family<T>*>(*family);
}

template <typename T>
Family<T>& Registry::Add(std::string name, std::string help, Labels const_labels) {
  absl::StatusOr<Family<T>*> family = TryAdd<T>(name, help, const_labels);
  if (family.ok()) return **family;
  return static_cast<Family<T>&>(AddDetached(family.status(), [&] {
    return std::make_unique<Family<T>>(std::move(name), std::move(help), std::move(const_labels));
  }));
}

}  // namespace orca::metrics
