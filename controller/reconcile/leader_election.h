// Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection:
// the holder renews spec.renewTime every retry period; a candidate takes the lease
// over once it has seen no renewal for leaseDurationSeconds (measured on its own
// clock, so clock skew between instances does not matter). Writes use the Lease's
// resourceVersion, so two candidates never both win.
//
// Thread-safe: TryAcquireOrRenew() is called by one loop; IsLeader() from anywhere.
#pragma once

#include <atomic>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "controller/client/kube_client.h"

namespace orca::controller {

struct LeaderElectionConfig {
  std::string ns = "default";
  std::string name = "orca-controller";
  std::string identity;  // unique per instance (pod name)
  absl::Duration lease_duration = absl::Seconds(15);
  absl::Duration renew_deadline = absl::Seconds(10);
  absl::Duration retry_period = absl::Seconds(2);
};

class LeaderElector {
 public:
  // `client` must outlive the elector.
  LeaderElector(KubeClient* client, LeaderElectionConfig config);

  // Makes one attempt to acquire or renew the lease. OK when this instance holds it
  // afterwards; FailedPrecondition naming the holder when another instance does;
  // other errors from the API (Aborted on a lost race).
  absl::Status TryAcquireOrRenew();

  // Gives the lease up (empty holder) if this instance holds it; best effort.
  void Release();

  bool IsLeader() const { return leader_.load(); }
  const LeaderElectionConfig& config() const { return config_; }

 private:
  KubeClient* const client_;
  const LeaderElectionConfig config_;
  std::atomic<bool> leader_{false};
  absl::Mutex mu_;
  std::string observed_record_ ABSL_GUARDED_BY(mu_);  // holder + renewTime last seen
  absl::Time observed_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace orca::controller
