// The InferenceDeployment reconciler: drives the owned objects of one CR towards
// the desired state, level-based and idempotent (controller-runtime's contract).
//
// Reconcile() is a straight list of named steps (see reconciler.cc). It returns a
// result with an optional requeue delay, or an error that means "retry with
// backoff". It never writes spec.replicas. Safe to call from several threads for
// different keys; the work queue guarantees one call per key at a time.
#pragma once

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "controller/client/kube_client.h"

namespace orca::controller {

struct ReconcilerOptions {
  std::function<absl::Time()> clock = [] { return absl::Now(); };
  bool emit_events = true;
  // Safety-net requeue while a rollout or scale is in progress (watches drive it too).
  absl::Duration progress_requeue = absl::Seconds(30);
};

struct ReconcileResult {
  absl::Duration requeue_after = absl::ZeroDuration();  // zero: no requeue
};

class Reconciler {
 public:
  // `client` must outlive the reconciler.
  Reconciler(KubeClient* client, ReconcilerOptions options = {});

  // Reconciles InferenceDeployment `ns`/`name`. A missing CR is success (its owned
  // objects are garbage-collected through ownerReferences). An invalid spec is
  // reported as Degraded/InvalidSpec in status and is success too: a retry would
  // not help.
  absl::StatusOr<ReconcileResult> Reconcile(const std::string& ns, const std::string& name);

 private:
  struct Pass;  // state of one Reconcile call (reconciler.cc)

  absl::Status FetchDeployment(Pass& p);
  absl::Status ReportInvalidSpec(Pass& p);
  absl::Status ObserveOwnedObjects(Pass& p);
  absl::Status HandleGroupFailures(Pass& p);
  absl::Status StopSchedulerForRestart(Pass& p, int group, int restart);
  void ContinueGroupRestart(Pass& p, int group);
  void PlanGroupRollout(Pass& p);
  absl::Status ApplyEngineConfig(Pass& p);
  absl::Status ApplySharedObjects(Pass& p);
  absl::Status ApplyGroups(Pass& p);
  absl::Status ReplaceStalePods(Pass& p);
  absl::Status PruneUnwantedObjects(Pass& p);
  absl::Status UpdateStatus(Pass& p);

  // Applies `desired` unless the live object (if listed) already contains it.
  absl::Status ApplyIfChanged(Pass& p, const Json& desired, const std::vector<Json>& live);
  void RecordBlockedPodEvents(const Pass& p);
  void RecordEvent(const Pass& p, const std::string& type, const std::string& reason,
                   const std::string& message);

  KubeClient* const client_;
  const ReconcilerOptions options_;
};

}  // namespace orca::controller
