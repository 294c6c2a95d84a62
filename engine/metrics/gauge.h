// Gauge: a value that goes up and down (requests running, KV-cache usage), exposed
// with TYPE gauge.
//
// Thread-safe and lock-free: every operation is one atomic access. Owned by its
// Family; never copied.
#pragma once

#include <atomic>

#include "engine/metrics/labels.h"

namespace orca::metrics {

class Gauge {
 public:
  static constexpr MetricType kType = MetricType::kGauge;

  Gauge() = default;
  Gauge(const Gauge&) = delete;
  Gauge& operator=(const Gauge&) = delete;

  // Replaces the value with `value`.
  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  // Adds `amount` (default 1).
  void Increment(double amount = 1.0) { value_.fetch_add(amount, std::memory_order_relaxed); }
  // Subtracts `amount` (default 1).
  void Decrement(double amount = 1.0) { value_.fetch_sub(amount, std::memory_order_relaxed); }
  // Returns the current value.
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

}  // namespace orca::metrics
