#include "controller/reconcile/reconciler.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "controller/api/spec.h"
#include "controller/builders/builders.h"
#include "controller/builders/layout.h"
#include "controller/client/kube_errors.h"
#include "controller/status/group_stop.h"
#include "controller/status/observe.h"
#include "controller/status/status.h"
#include "engine/common/log.h"
#include "engine/common/status_macros.h"

namespace orca::controller {

struct Reconciler::Pass {
  std::string ns;
  std::string name;
  absl::Time now;
  Json raw;
  bool gone = false;
  std::optional<InferenceDeployment> d;
  std::string invalid_spec;
  std::string update_revision;
  OwnedObjects owned;
  std::vector<GroupObservation> groups;
  std::map<int, GroupRecord> records;
  RolloutPlan plan;
  std::optional<Problem> degraded;
  std::optional<Problem> scaling;
  std::optional<Problem> routing;
  std::vector<BlockedPod> blocked;
  std::set<int> released;  // groups past the restart limit: scaled to zero
  // Restarting groups whose scheduler is kept at zero replicas, with the value of
  // their kAnnotationRestarting; and those whose workers are replaced in this pass.
  std::map<int, std::string> stopping;
  std::set<int> replace_workers;
  absl::Duration requeue = absl::ZeroDuration();

  void RequeueAfter(absl::Duration delay) {
    if (requeue == absl::ZeroDuration() || delay < requeue) requeue = delay;
  }
};

namespace {

std::string NameOf(const Json& o) { return o["metadata"].value("name", ""); }

bool OwnedBy(const Json& o, const std::string& uid) {
  if (uid.empty()) return true;
  if (!o.contains("metadata") || !o["metadata"].contains("ownerReferences")) return false;
  for (const Json& ref : o["metadata"]["ownerReferences"]) {
    if (ref.value("uid", "") == uid) return true;
  }
  return false;
}

const Json* FindByName(const std::vector<Json>& list, const std::string& name) {
  for (const Json& o : list) {
    if (NameOf(o) == name) return &o;
  }
  return nullptr;
}

bool Terminating(const Json& o) { return o["metadata"].contains("deletionTimestamp"); }

}  // namespace

Reconciler::Reconciler(KubeClient* client, ReconcilerOptions options)
    : client_(client), options_(std::move(options)) {}

absl::StatusOr<ReconcileResult> Reconciler::Reconcile(const std::string& ns,
                                                      const std::string& name) {
  Pass p;
  p.ns = ns;
  p.name = name;
  p.now = options_.clock();
  ORCA_RETURN_IF_ERROR(FetchDeployment(p));
  if (p.gone) return ReconcileResult{};
  if (!p.d) {
    ORCA_RETURN_IF_ERROR(ReportInvalidSpec(p));
    return ReconcileResult{};
  }
  ORCA_RETURN_IF_ERROR(ObserveOwnedObjects(p));
  ORCA_RETURN_IF_ERROR(HandleGroupFailures(p));
  PlanGroupRollout(p);
  absl::Status applied = ApplyEngineConfig(p);
  if (applied.ok()) applied = ApplySharedObjects(p);
  if (applied.ok()) applied = ApplyGroups(p);
  if (applied.ok()) applied = ReplaceStalePods(p);
  if (applied.ok()) applied = PruneUnwantedObjects(p);
  if (!applied.ok() && !IsConflict(applied) && !IsRetryable(applied)) {
    p.degraded = Problem{"ApplyFailed", std::string(applied.message())};
  }
  ORCA_RETURN_IF_ERROR(UpdateStatus(p));
  ORCA_RETURN_IF_ERROR(applied);
  if (!p.plan.complete) p.RequeueAfter(options_.progress_requeue);
  return ReconcileResult{p.requeue};
}

// Step 1: read the CR. Missing or being deleted: nothing to do.
absl::Status Reconciler::FetchDeployment(Pass& p) {
  absl::StatusOr<Json> raw = client_->Get(resources::kInferenceDeployment, p.ns, p.name);
  if (absl::IsNotFound(raw.status())) {
    p.gone = true;
    return absl::OkStatus();
  }
  ORCA_RETURN_IF_ERROR(raw.status());
  p.raw = std::move(*raw);
  if (p.raw.contains("metadata") && p.raw["metadata"].contains("deletionTimestamp")) {
    p.gone = true;
    return absl::OkStatus();
  }
  absl::StatusOr<InferenceDeployment> d = ParseInferenceDeployment(p.raw);
  if (!d.ok()) {
    p.invalid_spec = std::string(d.status().message());
    return absl::OkStatus();
  }
  p.d = std::move(*d);
  p.update_revision = RevisionHash(p.d->spec);
  return absl::OkStatus();
}

// Step 2 (invalid spec only): say so in status and in an Event; touch nothing else.
absl::Status Reconciler::ReportInvalidSpec(Pass& p) {
  Json stored = p.raw.contains("status") ? p.raw["status"] : Json::object();
  int64_t generation = p.raw["metadata"].value("generation", int64_t{0});
  Json status = InvalidSpecStatus(stored, generation, p.invalid_spec, p.now);
  if (!StatusDiffers(stored, status)) return absl::OkStatus();
  ORCA_LOG(WARNING) << "InferenceDeployment " << p.ns << "/" << p.name << ": " << p.invalid_spec;
  RecordEvent(p, "Warning", "InvalidSpec", p.invalid_spec);
  Json obj = p.raw;
  obj["status"] = status;
  return client_->UpdateStatus(resources::kInferenceDeployment, obj).status();
}

// Step 3: list everything labelled as ours and keep what this CR controls.
absl::Status Reconciler::ObserveOwnedObjects(Pass& p) {
  ListOptions opts;
  opts.label_selector = absl::StrCat(kLabelDeployment, "=", p.name);
  const std::string& uid = p.d->uid;
  auto list = [&](const ResourceType& type, std::vector<Json>& out, bool optional_api,
                  bool check_owner) -> absl::Status {
    absl::StatusOr<ObjectList> l = client_->List(type, p.ns, opts);
    if (optional_api && absl::IsNotFound(l.status())) return absl::OkStatus();  // API not installed
    ORCA_RETURN_IF_ERROR(l.status());
    for (Json& o : l->items) {
      if (!check_owner || OwnedBy(o, uid)) out.push_back(std::move(o));
    }
    return absl::OkStatus();
  };
  ORCA_RETURN_IF_ERROR(list(resources::kConfigMap, p.owned.config_maps, false, true));
  ORCA_RETURN_IF_ERROR(list(resources::kService, p.owned.services, false, true));
  ORCA_RETURN_IF_ERROR(list(resources::kDeployment, p.owned.deployments, false, true));
  ORCA_RETURN_IF_ERROR(list(resources::kStatefulSet, p.owned.stateful_sets, false, true));
  ORCA_RETURN_IF_ERROR(list(resources::kIngress, p.owned.ingresses, true, true));
  ORCA_RETURN_IF_ERROR(list(resources::kHorizontalPodAutoscaler, p.owned.autoscalers, true, true));
  ORCA_RETURN_IF_ERROR(list(resources::kScaledObject, p.owned.scaled_objects, true, true));
  ORCA_RETURN_IF_ERROR(list(resources::kInferencePool, p.owned.inference_pools, true, true));
  ORCA_RETURN_IF_ERROR(list(resources::kPod, p.owned.pods, false, false));
  p.groups = ObserveGroups(p.owned);
  p.blocked = ObserveBlockedPods(p.owned, p.now);
  return absl::OkStatus();
}

// Step 4: a group whose pod restarted or failed is restarted as a whole, with
// exponential backoff and at most maxGroupRestarts times per revision: its scheduler
// is scaled to zero first (StopSchedulerForRestart), and once it has stopped its
// worker pods are replaced together (ContinueGroupRestart). A restarting group counts
// as not ready, so the rollout plan applies it (at the update revision).
// A group at the update revision that fails past the limit is released: ApplyGroups
// scales it to zero (scheduler first) so its GPUs are freed, and it stays so (its
// scheduler Deployment at zero replicas says so) until the spec changes or
// maxGroupRestarts is raised.
absl::Status Reconciler::HandleGroupFailures(Pass& p) {
  const InferenceDeployment& d = *p.d;
  const GroupPolicy& policy = d.spec.group_policy;
  p.records = ReadGroupRecords(d.status);
  for (GroupObservation& g : p.groups) {
    if (!g.exists || g.index >= d.spec.replicas) continue;
    GroupRecord& r = p.records[g.index];
    r.index = g.index;
    if (!g.revision.empty() && r.revision != g.revision) {
      r = GroupRecord{g.index, 0, g.revision, "", ""};  // a new revision starts afresh
    }
    if (RestartPending(p.owned, g.index)) {
      g.ready = false;
      ContinueGroupRestart(p, g.index);
      continue;
    }
    bool at_update = !g.revision.empty() && g.revision == p.update_revision;
    bool released = ScaledToZero(p.owned, g.index);
    if (r.restarts >= policy.max_group_restarts && at_update && (!g.failure.empty() || released)) {
      if (!g.failure.empty()) r.last_failure = g.failure;
      p.released.insert(g.index);
      p.degraded = Problem{
          "GroupRestartLimitExceeded",
          absl::StrCat("serving group ", g.index, " kept failing after ", r.restarts,
                       " restart(s) (groupPolicy.maxGroupRestarts ", policy.max_group_restarts,
                       "): ", r.last_failure,
                       ". Its scheduler and workers were scaled to zero to release their GPUs. "
                       "To retry, fix the spec (a new revision resets the count and starts the "
                       "group again) or raise groupPolicy.maxGroupRestarts")};
      if (!released) {
        RecordEvent(
            p, "Warning", "GroupReleased",
            absl::StrCat(
                "serving group ", g.index, " exceeded groupPolicy.maxGroupRestarts ",
                policy.max_group_restarts,
                ": scaling it to zero to release its GPUs; last failure: ", r.last_failure));
      }
      continue;
    }
    if (g.failure.empty()) continue;
    r.last_failure = g.failure;
    if (r.restarts >= policy.max_group_restarts) {
      p.degraded = Problem{
          "GroupRestartLimitExceeded",
          absl::StrCat("serving group ", g.index, " keeps failing after ", r.restarts,
                       " restart(s) (groupPolicy.maxGroupRestarts ", policy.max_group_restarts,
                       "): ", g.failure, ". Inspect `kubectl logs ", g.failed_pod,
                       " --previous`, then fix the spec (a new revision resets the count) or "
                       "raise groupPolicy.maxGroupRestarts")};
      continue;
    }
    if (r.restarts > 0) {
      absl::Duration backoff =
          absl::Seconds(RestartBackoffSeconds(policy.restart_backoff_seconds, r.restarts - 1));
      absl::Duration waited = p.now - ParseRfc3339(r.last_restart_time);
      if (waited < backoff) {
        p.RequeueAfter(backoff - waited);
        continue;
      }
    }
    ORCA_RETURN_IF_ERROR(StopSchedulerForRestart(p, g.index, r.restarts + 1));
    ++r.restarts;
    r.last_restart_time = FormatRfc3339(p.now);
    g.ready = false;
    std::string msg =
        absl::StrCat("restarting serving group ", g.index, " (restart ", r.restarts, " of at most ",
                     policy.max_group_restarts, "; scheduler first, then workers): ", g.failure);
    ORCA_LOG(INFO) << d.ns << "/" << d.name << ": " << msg;
    RecordEvent(p, "Warning", "GroupRestart", msg);
  }
  return absl::OkStatus();
}

// Restarts group `g`, step 1: has ApplyGroups scale its scheduler Deployment to zero
// and mark it (kAnnotationRestarting = `restart`), so that the scheduler drains while
// its workers still run. Without a scheduler Deployment, deletes the group's pods at
// once.
absl::Status Reconciler::StopSchedulerForRestart(Pass& p, int g, int restart) {
  if (SchedulerDeployment(p.owned, g) != nullptr) {
    p.stopping[g] = std::to_string(restart);
    return absl::OkStatus();
  }
  for (const Json& pod : p.owned.pods) {
    if (LabelInt(pod, kLabelGroup) != g || Terminating(pod)) continue;
    absl::Status s = client_->Delete(resources::kPod, p.ns, NameOf(pod), Propagation::kBackground);
    if (!s.ok() && !absl::IsNotFound(s)) return s;
  }
  return absl::OkStatus();
}

// Restarts group `g`, step 2: until its scheduler has stopped (SchedulerStopped), keeps
// it at zero; then ApplyGroups scales it back up unmarked and ReplaceStalePods deletes
// the group's worker pods together.
void Reconciler::ContinueGroupRestart(Pass& p, int g) {
  SchedulerStop stop = SchedulerStopped(p.owned.pods, g, "", p.now);
  if (!stop.stopped || !ScaledToZero(p.owned, g)) {
    const Json& d = *SchedulerDeployment(p.owned, g);
    p.stopping[g] = d["metadata"]["annotations"][kAnnotationRestarting].is_string()
                        ? d["metadata"]["annotations"][kAnnotationRestarting].get<std::string>()
                        : "1";
    p.RequeueAfter(std::min(stop.wait, absl::Seconds(2)));
    return;
  }
  p.replace_workers.insert(g);
}

// Step 5: decide which groups move to the update revision now.
void Reconciler::PlanGroupRollout(Pass& p) {
  const InferenceDeploymentSpec& spec = p.d->spec;
  RolloutInput in;
  in.replicas = spec.replicas;
  in.update_revision = p.update_revision;
  in.recreate = spec.rollout.type == "Recreate";
  in.max_unavailable = spec.rollout.max_unavailable;
  in.groups = p.groups;
  p.plan = PlanRollout(in);
}

absl::Status Reconciler::ApplyIfChanged(Pass& p, const Json& desired,
                                        const std::vector<Json>& live) {
  const Json* current = FindByName(live, NameOf(desired));
  if (current != nullptr && ContainsAll(*current, desired)) return absl::OkStatus();
  const ResourceType* type = resources::ForObject(desired);
  if (type == nullptr) return absl::InternalError("no resource type for a built object");
  (void)p;
  return client_->Apply(*type, desired, /*force=*/true).status();
}

// Step 6: the engine ConfigMap of the update revision (each revision has its own,
// so groups still on an old revision keep reading their own configuration).
absl::Status Reconciler::ApplyEngineConfig(Pass& p) {
  return ApplyIfChanged(p, BuildEngineConfigMap(*p.d, p.update_revision), p.owned.config_maps);
}

// Step 7: client Service, Ingress, HPA or KEDA ScaledObject.
absl::Status Reconciler::ApplySharedObjects(Pass& p) {
  const InferenceDeployment& d = *p.d;
  ORCA_RETURN_IF_ERROR(ApplyIfChanged(p, BuildClientService(d), p.owned.services));
  if (d.spec.ingress.enabled) {
    ORCA_RETURN_IF_ERROR(ApplyIfChanged(p, BuildIngress(d), p.owned.ingresses));
  }
  if (d.spec.routing.inference_pool.enabled) {
    absl::Status s = ApplyIfChanged(p, BuildInferencePool(d), p.owned.inference_pools);
    if (absl::IsNotFound(s)) {
      p.routing = Problem{"InferencePoolApiMissing",
                          "the inference.networking.k8s.io/v1 InferencePool API is not served by "
                          "this cluster: install the Gateway API Inference Extension CRDs or set "
                          "spec.routing.inferencePool.enabled to false"};
    } else if (IsForbidden(s)) {
      p.routing = Problem{"InferencePoolForbidden",
                          absl::StrCat(s.message(),
                                       "; grant orca-controller RBAC on "
                                       "inferencepools.inference.networking.k8s.io")};
    } else {
      ORCA_RETURN_IF_ERROR(s);
    }
  }
  if (!d.spec.autoscaling.enabled) return absl::OkStatus();
  bool keda = d.spec.autoscaling.backend == "KEDA";
  absl::Status s = keda ? ApplyIfChanged(p, BuildScaledObject(d), p.owned.scaled_objects)
                        : ApplyIfChanged(p, BuildHorizontalPodAutoscaler(d), p.owned.autoscalers);
  if (absl::IsNotFound(s)) {
    p.scaling = Problem{keda ? "KedaNotInstalled" : "AutoscalingApiMissing",
                        keda ? "the keda.sh/v1alpha1 ScaledObject API is not served by this "
                               "cluster: install KEDA or set spec.autoscaling.backend to HPA"
                             : "the autoscaling/v2 API is not served by this cluster"};
    return absl::OkStatus();
  }
  if (IsForbidden(s)) {
    p.scaling = Problem{"AutoscalerForbidden",
                        absl::StrCat(s.message(), "; grant orca-controller RBAC on ",
                                     keda ? "scaledobjects.keda.sh" : "horizontalpodautoscalers")};
    return absl::OkStatus();
  }
  return s;
}

// Step 8: every object of every group planned for the update revision, whole
// groups at a time. A released group gets zero replicas: its scheduler first, its
// workers once the scheduler has stopped.
absl::Status Reconciler::ApplyGroups(Pass& p) {
  const InferenceDeployment& d = *p.d;
  for (int g : p.plan.apply) {
    auto obs = std::find_if(p.groups.begin(), p.groups.end(),
                            [g](const GroupObservation& o) { return o.index == g; });
    bool exists = obs != p.groups.end() && obs->exists;
    bool changes_revision = exists && obs->revision != p.update_revision;
    bool released = p.released.count(g) > 0;
    SchedulerStop stop;
    if (released) {
      stop = SchedulerStopped(p.owned.pods, g, "", p.now);
      if (!stop.stopped || !ScaledToZero(p.owned, g)) {
        stop.stopped = false;
        p.RequeueAfter(std::min(stop.wait, absl::Seconds(2)));
      }
    }
    for (Json o : BuildGroupObjects(d, g, p.update_revision)) {
      const std::string kind = o.value("kind", "");
      if (released && (kind == "Deployment" || (kind == "StatefulSet" && stop.stopped))) {
        o["spec"]["replicas"] = 0;
      }
      if (p.stopping.count(g) && kind == "Deployment") {
        o["spec"]["replicas"] = 0;
        o["metadata"]["annotations"][kAnnotationRestarting] = p.stopping[g];
      }
      const std::vector<Json>& live = kind == "Deployment"    ? p.owned.deployments
                                      : kind == "StatefulSet" ? p.owned.stateful_sets
                                                              : p.owned.services;
      ORCA_RETURN_IF_ERROR(ApplyIfChanged(p, o, live));
    }
    if (released) continue;
    if (!exists) {
      RecordEvent(p, "Normal", "CreatedGroup",
                  absl::StrCat("created serving group ", g, " at revision ", p.update_revision));
    } else if (changes_revision) {
      RecordEvent(p, "Normal", "UpdatingGroup",
                  absl::StrCat("updating serving group ", g, " from revision ",
                               obs->revision.empty() ? "(mixed)" : obs->revision, " to ",
                               p.update_revision));
    }
  }
  return absl::OkStatus();
}

// Step 9: worker StatefulSets use OnDelete, so the controller replaces the stale
// pods of a group being updated together (and all worker pods of a group whose
// restart has stopped its scheduler), once the group's old scheduler has
// stopped (the scheduler Deployment is Recreate: its old pod goes first), so that it
// drains its in-flight requests through workers that are still there.
absl::Status Reconciler::ReplaceStalePods(Pass& p) {
  std::set<int> updating(p.plan.apply.begin(), p.plan.apply.end());
  std::map<int, SchedulerStop> stops;
  for (const Json& pod : p.owned.pods) {
    int g = LabelInt(pod, kLabelGroup);
    if (!updating.count(g) || Terminating(pod) || Label(pod, kLabelRole) != "worker") continue;
    if (Label(pod, kLabelRevision) == p.update_revision && !p.replace_workers.count(g)) continue;
    if (!stops.count(g)) stops[g] = SchedulerStopped(p.owned.pods, g, p.update_revision, p.now);
    if (!stops[g].stopped) {
      p.RequeueAfter(stops[g].wait);
      continue;
    }
    absl::Status s = client_->Delete(resources::kPod, p.ns, NameOf(pod), Propagation::kBackground);
    if (!s.ok() && !absl::IsNotFound(s)) return s;
  }
  return absl::OkStatus();
}

// Step 10: delete owned objects nothing wants any more (removed groups and stages,
// unused engine ConfigMaps, disabled Ingress, InferencePool or autoscaler). A removed
// group's scheduler goes first; its workers only once the scheduler has stopped.
absl::Status Reconciler::PruneUnwantedObjects(Pass& p) {
  const InferenceDeployment& d = *p.d;
  std::set<std::string> wanted_cm = {ConfigMapName(d.name, p.update_revision)};
  std::set<std::string> wanted_svc = {d.name};
  std::set<std::string> wanted_deploy;
  std::set<std::string> wanted_sts;
  std::set<int> kept(p.plan.keep.begin(), p.plan.keep.end());
  for (int g : p.plan.apply) {
    wanted_svc.insert({SchedulerName(d.name, g), HeadlessServiceName(d.name, g)});
    wanted_deploy.insert(SchedulerName(d.name, g));
    for (int s = 0; s < d.spec.parallelism.pipeline; ++s)
      wanted_sts.insert(StageName(d.name, g, s));
  }
  for (const GroupObservation& g : p.groups) {
    if (!kept.count(g.index)) continue;
    wanted_svc.insert({SchedulerName(d.name, g.index), HeadlessServiceName(d.name, g.index)});
    wanted_deploy.insert(SchedulerName(d.name, g.index));
    for (const Json& sts : p.owned.stateful_sets) {
      if (LabelInt(sts, kLabelGroup) == g.index) wanted_sts.insert(NameOf(sts));
    }
    for (const Json& dep : p.owned.deployments) {
      if (LabelInt(dep, kLabelGroup) == g.index) {
        wanted_cm.insert(ConfigMapName(d.name, Label(dep, kLabelRevision)));
      }
    }
  }
  std::vector<int> deleted_groups;
  for (int g : p.plan.remove) {
    SchedulerStop stop = SchedulerStopped(p.owned.pods, g, "", p.now);
    if (stop.stopped && SchedulerDeployment(p.owned, g) == nullptr) {
      deleted_groups.push_back(g);
      continue;
    }
    for (const Json& sts : p.owned.stateful_sets) {
      if (LabelInt(sts, kLabelGroup) == g) wanted_sts.insert(NameOf(sts));
    }
    wanted_svc.insert(HeadlessServiceName(d.name, g));
    p.RequeueAfter(stop.stopped ? absl::Seconds(1) : stop.wait);
  }
  auto prune = [&](const ResourceType& type, const std::vector<Json>& live,
                   const std::set<std::string>& wanted) -> absl::Status {
    for (const Json& o : live) {
      if (wanted.count(NameOf(o)) || Terminating(o)) continue;
      absl::Status s = client_->Delete(type, p.ns, NameOf(o), Propagation::kBackground);
      if (!s.ok() && !absl::IsNotFound(s)) return s;
    }
    return absl::OkStatus();
  };
  bool ingress = d.spec.ingress.enabled;
  bool hpa = d.spec.autoscaling.enabled && d.spec.autoscaling.backend == "HPA";
  bool keda = d.spec.autoscaling.enabled && d.spec.autoscaling.backend == "KEDA";
  bool pool = d.spec.routing.inference_pool.enabled;
  ORCA_RETURN_IF_ERROR(prune(resources::kDeployment, p.owned.deployments, wanted_deploy));
  ORCA_RETURN_IF_ERROR(prune(resources::kStatefulSet, p.owned.stateful_sets, wanted_sts));
  ORCA_RETURN_IF_ERROR(prune(resources::kService, p.owned.services, wanted_svc));
  ORCA_RETURN_IF_ERROR(prune(resources::kConfigMap, p.owned.config_maps, wanted_cm));
  ORCA_RETURN_IF_ERROR(prune(resources::kIngress, p.owned.ingresses,
                             ingress ? std::set<std::string>{d.name} : std::set<std::string>{}));
  ORCA_RETURN_IF_ERROR(prune(resources::kHorizontalPodAutoscaler, p.owned.autoscalers,
                             hpa ? std::set<std::string>{d.name} : std::set<std::string>{}));
  ORCA_RETURN_IF_ERROR(prune(resources::kScaledObject, p.owned.scaled_objects,
                             keda ? std::set<std::string>{d.name} : std::set<std::string>{}));
  ORCA_RETURN_IF_ERROR(prune(resources::kInferencePool, p.owned.inference_pools,
                             pool ? std::set<std::string>{d.name} : std::set<std::string>{}));
  for (int g : deleted_groups) {
    RecordEvent(
        p, "Normal", "DeletedGroup",
        absl::StrCat("deleted serving group ", g, " (spec.replicas is ", d.spec.replicas, ")"));
  }
  return absl::OkStatus();
}

// Step 11: write status when it changed (resourceVersion precondition: a conflict
// means the CR changed under us, and the retry sees the new spec).
absl::Status Reconciler::UpdateStatus(Pass& p) {
  StatusInput in;
  in.deployment = &*p.d;
  in.update_revision = p.update_revision;
  in.plan = p.plan;
  in.groups = p.groups;
  in.records = p.records;
  in.degraded = p.degraded;
  in.scaling = p.scaling;
  in.routing = p.routing;
  in.blocked = p.blocked;
  in.now = p.now;
  Json status = ComputeStatus(in);
  RecordBlockedPodEvents(p);
  if (!StatusDiffers(p.d->status, status)) return absl::OkStatus();
  Json obj = p.raw;
  obj["status"] = status;
  return client_->UpdateStatus(resources::kInferenceDeployment, obj).status();
}

// One Warning Event per pod that became blocked (reason and pod not yet in the stored
// PodsBlocked condition), for the pods the condition names.
void Reconciler::RecordBlockedPodEvents(const Pass& p) {
  std::string known;
  if (p.d->status.is_object() && p.d->status.contains("conditions") &&
      p.d->status["conditions"].is_array()) {
    for (const Json& c : p.d->status["conditions"]) {
      if (c.value("type", "") == "PodsBlocked" && c.value("status", "") == "True") {
        known = c.value("message", "");
      }
    }
  }
  for (size_t i = 0; i < p.blocked.size() && i < kBlockedPodsShown; ++i) {
    const BlockedPod& b = p.blocked[i];
    std::string tag = absl::StrCat("pod ", b.pod, " (group ", b.group, ") ", b.reason, ":");
    if (known.find(tag) != std::string::npos) continue;
    RecordEvent(p, "Warning", b.reason, absl::StrCat(tag, " ", b.message));
  }
}

void Reconciler::RecordEvent(const Pass& p, const std::string& type, const std::string& reason,
                             const std::string& message) {
  if (!options_.emit_events) return;
  static std::atomic<uint64_t> counter{0};
  std::string uid = p.raw["metadata"].value("uid", "");
  std::string ts = FormatRfc3339(p.now);
  Json event = {{"apiVersion", "v1"},
                {"kind", "Event"},
                {"metadata",
                 {{"name", absl::StrFormat("%s.%x%04x", p.name, absl::ToUnixNanos(p.now),
                                           counter.fetch_add(1) & 0xffff)},
                  {"namespace", p.ns}}},
                {"involvedObject",
                 {{"apiVersion", kApiVersion},
                  {"kind", kKind},
                  {"name", p.name},
                  {"namespace", p.ns},
                  {"uid", uid}}},
                {"type", type},
                {"reason", reason},
                {"message", message.substr(0, 1024)},
                {"source", {{"component", kFieldManager}}},
                {"reportingComponent", kFieldManager},
                {"firstTimestamp", ts},
                {"lastTimestamp", ts},
                {"count", 1}};
  absl::Status s = client_->Create(resources::kEvent, event).status();
  if (!s.ok()) {
    ORCA_LOG(DEBUG) << "event " << reason << " not recorded: " << s.message();
  }
}

}  // namespace orca::controller
