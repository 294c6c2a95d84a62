// Fluent builders for metric families, after prometheus-cpp:
//
//   auto& tokens = BuildCounter()
//                      .Name("orca_prompt_tokens_total")
//                      .Help("Prompt tokens processed.")
//                      .Labels({{"model_name", "m"}})
//                      .Register(registry);
//   Counter& stop = tokens.Add({{"finished_reason", "stop"}});
//
// A Builder is a plain value (not thread-safe, cheap to copy); the Family it
// registers is owned by the Registry.
#pragma once

#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "engine/metrics/family.h"
#include "engine/metrics/labels.h"
#include "engine/metrics/registry.h"

namespace orca::metrics {

template <typename T>
class Builder {
 public:
  // Sets the metric name: [a-zA-Z_:][a-zA-Z0-9_:]*, by convention ending in the unit
  // ("_seconds") and, for counters, "_total".
  Builder& Name(std::string name) {
    name_ = std::move(name);
    return *this;
  }
  // Sets the HELP text (any UTF-8; escaped on output).
  Builder& Help(std::string help) {
    help_ = std::move(help);
    return *this;
  }
  // Sets constant labels carried by every series of the family (e.g. model_name).
  Builder& Labels(metrics::Labels const_labels) {
    const_labels_ = std::move(const_labels);
    return *this;
  }

  // Registers the family in `registry` (see Registry::TryAdd for merging and errors).
  absl::StatusOr<Family<T>*> TryRegister(Registry& registry) const {
    return registry.TryAdd<T>(name_, help_, const_labels_);
  }
  // Registers the family in `registry`; failure is a programming error (see
  // Registry::Add).
  Family<T>& Register(Registry& registry) const {
    return registry.Add<T>(name_, help_, const_labels_);
  }

 private:
  std::string name_;
  std::string help_;
  metrics::Labels const_labels_;
};

// Returns a builder for a family of counters, gauges or histograms.
inline Builder<Counter> BuildCounter() { return {}; }
inline Builder<Gauge> BuildGauge() { return {}; }
inline Builder<Histogram> BuildHistogram() { return {}; }

}  // namespace orca::metrics
