#include "controller/reconcile/metrics.h"

#include "absl/strings/str_cat.h"

namespace orca::controller {

void ControllerMetrics::ObserveReconcile(const std::string& result, double seconds) {
  absl::MutexLock lock(&mu_);
  ++reconciles_[result];
  ++duration_count_;
  duration_sum_ += seconds;
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) ++bucket_counts_[i];
  }
}

void ControllerMetrics::SetWatchRestarts(const std::string& resource, int64_t restarts) {
  absl::MutexLock lock(&mu_);
  watch_restarts_[resource] = restarts;
}

int64_t ControllerMetrics::reconciles(const std::string& result) const {
  absl::MutexLock lock(&mu_);
  auto it = reconciles_.find(result);
  return it == reconciles_.end() ? 0 : it->second;
}

std::string ControllerMetrics::Render() const {
  absl::MutexLock lock(&mu_);
  std::string out;
  absl::StrAppend(&out,
                  "# HELP orca_controller_reconcile_total Reconcile calls by result.\n"
                  "# TYPE orca_controller_reconcile_total counter\n");
  for (const char* r : {"success", "requeue", "error"}) {
    auto it = reconciles_.find(r);
    absl::StrAppend(&out, "orca_controller_reconcile_total{result=\"", r, "\"} ",
                    it == reconciles_.end() ? 0 : it->second, "\n");
  }
  auto errors = reconciles_.find("error");
  absl::StrAppend(&out,
                  "# HELP orca_controller_reconcile_errors_total Reconcile calls that failed.\n"
                  "# TYPE orca_controller_reconcile_errors_total counter\n"
                  "orca_controller_reconcile_errors_total ",
                  errors == reconciles_.end() ? 0 : errors->second, "\n");
  absl::StrAppend(&out,
                  "# HELP orca_controller_reconcile_duration_seconds Time per Reconcile call.\n"
                  "# TYPE orca_controller_reconcile_duration_seconds histogram\n");
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    absl::StrAppend(&out, "orca_controller_reconcile_duration_seconds_bucket{le=\"", kBuckets[i],
                    "\"} ", bucket_counts_[i], "\n");
  }
  absl::StrAppend(&out, "orca_controller_reconcile_duration_seconds_bucket{le=\"+Inf\"} ",
                  duration_count_, "\n", "orca_controller_reconcile_duration_seconds_sum ",
                  duration_sum_, "\n", "orca_controller_reconcile_duration_seconds_count ",
                  duration_count_, "\n");
  absl::StrAppend(&out,
                  "# HELP orca_controller_workqueue_depth Keys waiting in the work queue.\n"
                  "# TYPE orca_controller_workqueue_depth gauge\n"
                  "orca_controller_workqueue_depth ",
                  queue_depth_.load(), "\n",
                  "# HELP orca_controller_is_leader 1 while this instance holds the Lease.\n"
                  "# TYPE orca_controller_is_leader gauge\n"
                  "orca_controller_is_leader ",
                  leader_.load(), "\n",
                  "# HELP orca_controller_watch_restarts_total Watches re-established.\n"
                  "# TYPE orca_controller_watch_restarts_total counter\n");
  for (const auto& [resource, n] : watch_restarts_) {
    absl::StrAppend(&out, "orca_controller_watch_restarts_total{resource=\"", resource, "\"} ", n,
                    "\n");
  }
  return out;
}

}  // namespace orca::controller
