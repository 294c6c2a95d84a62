// Counter: a value that only goes up (requests finished, tokens generated), exposed
// with TYPE counter. By convention its family name ends in "_total".
//
// Thread-safe and lock-free: Increment is one atomic read-modify-write, so the
// scheduler may update it every iteration. Owned by its Family; never copied.
#pragma once

#include <atomic>

#include "engine/metrics/labels.h"

namespace orca::metrics {

class Counter {
 public:
  static constexpr MetricType kType = MetricType::kCounter;

  Counter() = default;
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;

  // Adds `amount` (default 1). Negative and NaN amounts are ignored: a counter never
  // decreases, and a reset would read as a process restart to rate().
  void Increment(double amount = 1.0) {
    if (!(amount >= 0.0)) return;
    value_.fetch_add(amount, std::memory_order_relaxed);
  }

  // Returns the current total.
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

}  // namespace orca::metrics
