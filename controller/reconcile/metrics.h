// The controller's own Prometheus metrics (text exposition format 0.0.4).
// Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace orca::controller {

class ControllerMetrics {
 public:
  // Records one Reconcile: result is "success", "requeue" or "error".
  void ObserveReconcile(const std::string& result, double seconds);
  void SetQueueDepth(int64_t depth) { queue_depth_ = depth; }
  void SetLeader(bool leader) { leader_ = leader ? 1 : 0; }
  void SetWatchRestarts(const std::string& resource, int64_t restarts);

  // Returns every metric in Prometheus text format.
  std::string Render() const;

  int64_t reconciles(const std::string& result) const;

 private:
  static constexpr std::array<double, 12> kBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                      0.1,   0.25,   0.5,   1.0,  2.5,   10.0};
  mutable absl::Mutex mu_;
  std::map<std::string, int64_t> reconciles_ ABSL_GUARDED_BY(mu_);
  std::array<int64_t, kBuckets.size()> bucket_counts_ ABSL_GUARDED_BY(mu_) = {};
  int64_t duration_count_ ABSL_GUARDED_BY(mu_) = 0;
  double duration_sum_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, int64_t> watch_restarts_ ABSL_GUARDED_BY(mu_);
  std::atomic<int64_t> queue_depth_{0};
  std::atomic<int> leader_{0};
};

}  // namespace orca::controller
