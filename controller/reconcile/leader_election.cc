#include "controller/reconcile/leader_election.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "controller/client/kube_errors.h"

namespace orca::controller {
namespace {

std::string MicroTime(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", t, absl::UTCTimeZone());
}

}  // namespace

LeaderElector::LeaderElector(KubeClient* client, LeaderElectionConfig config)
    : client_(client), config_(std::move(config)) {}

absl::Status LeaderElector::TryAcquireOrRenew() {
  absl::Time now = absl::Now();
  int duration_s = static_cast<int>(absl::ToInt64Seconds(config_.lease_duration));
  absl::StatusOr<Json> lease = client_->Get(resources::kLease, config_.ns, config_.name);
  if (absl::IsNotFound(lease.status())) {
    Json fresh = {{"apiVersion", "coordination.k8s.io/v1"},
                  {"kind", "Lease"},
                  {"metadata", {{"name", config_.name}, {"namespace", config_.ns}}},
                  {"spec",
                   {{"holderIdentity", config_.identity},
                    {"leaseDurationSeconds", duration_s},
                    {"acquireTime", MicroTime(now)},
                    {"renewTime", MicroTime(now)},
                    {"leaseTransitions", 0}}}};
    absl::Status s = client_->Create(resources::kLease, fresh).status();
    leader_ = s.ok();
    return s;
  }
  if (!lease.ok()) {
    leader_ = false;
    return lease.status();
  }
  Json& spec = (*lease)["spec"];
  if (!spec.is_object()) spec = Json::object();
  std::string holder = spec.value("holderIdentity", "");
  std::string record = absl::StrCat(holder, "@", spec.value("renewTime", ""));
  int held_for_s = spec.value("leaseDurationSeconds", duration_s);
  {
    absl::MutexLock lock(&mu_);
    if (record != observed_record_) {
      observed_record_ = record;
      observed_at_ = now;
    }
    if (!holder.empty() && holder != config_.identity &&
        observed_at_ + absl::Seconds(held_for_s) > now) {
      leader_ = false;
      return absl::FailedPreconditionError(
          absl::StrCat("lease ", config_.ns, "/", config_.name, " is held by ", holder));
    }
  }
  if (holder != config_.identity) {
    spec["acquireTime"] = MicroTime(now);
    spec["leaseTransitions"] = spec.value("leaseTransitions", 0) + 1;
  }
  spec["holderIdentity"] = config_.identity;
  spec["renewTime"] = MicroTime(now);
  spec["leaseDurationSeconds"] = duration_s;
  absl::StatusOr<Json> updated = client_->Update(resources::kLease, *lease);
  leader_ = updated.ok();
  if (updated.ok()) {
    absl::MutexLock lock(&mu_);
    observed_record_ = absl::StrCat(config_.identity, "@", spec.value("renewTime", ""));
    observed_at_ = now;
  }
  return updated.status();
}

void LeaderElector::Release() {
  if (!leader_.exchange(false)) return;
  absl::StatusOr<Json> lease = client_->Get(resources::kLease, config_.ns, config_.name);
  if (!lease.ok() || (*lease)["spec"].value("holderIdentity", "") != config_.identity) return;
  (*lease)["spec"]["holderIdentity"] = "";
  (*lease)["spec"]["leaseDurationSeconds"] = 1;
  (void)client_->Update(resources::kLease, *lease);
}

}  // namespace orca::controller
