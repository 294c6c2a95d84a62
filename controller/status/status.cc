#include "controller/status/status.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "controller/builders/layout.h"

namespace orca::controller {
namespace {

// Returns the condition of `type` for the new status, keeping the old transition
// time when its status is unchanged.
Json Condition(const Json& old_status, const std::string& type, bool status,
               const std::string& reason, const std::string& message, int64_t generation,
               absl::Time now) {
  std::string s = status ? "True" : "False";
  std::string transition = FormatRfc3339(now);
  if (old_status.is_object() && old_status.contains("conditions") &&
      old_status["conditions"].is_array()) {
    for (const Json& c : old_status["conditions"]) {
      if (c.value("type", "") == type && c.value("status", "") == s &&
          c.contains("lastTransitionTime")) {
        transition = c["lastTransitionTime"].get<std::string>();
      }
    }
  }
  return Json{{"type", type},
              {"status", s},
              {"reason", reason},
              {"message", message},
              {"observedGeneration", generation},
              {"lastTransitionTime", transition}};
}

Json StripTimestamps(Json status) {
  if (status.is_object() && status.contains("conditions") && status["conditions"].is_array()) {
    for (Json& c : status["conditions"]) c.erase("lastTransitionTime");
  }
  return status;
}

}  // namespace

std::string FormatRfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

absl::Time ParseRfc3339(const std::string& s) {
  absl::Time t;
  std::string err;
  if (!absl::ParseTime("%Y-%m-%dT%H:%M:%SZ", s, absl::UTCTimeZone(), &t, &err)) {
    return absl::InfinitePast();
  }
  return t;
}

std::map<int, GroupRecord> ReadGroupRecords(const Json& status) {
  std::map<int, GroupRecord> out;
  if (!status.is_object() || !status.contains("groups") || !status["groups"].is_array()) {
    return out;
  }
  for (const Json& g : status["groups"]) {
    if (!g.is_object() || !g.contains("index") || !g["index"].is_number_integer()) continue;
    GroupRecord r;
    r.index = g["index"].get<int>();
    r.restarts = g.value("restarts", 0);
    r.revision = g.value("revision", "");
    r.last_failure = g.value("lastFailure", "");
    r.last_restart_time = g.value("lastRestartTime", "");
    out[r.index] = r;
  }
  return out;
}

Json ComputeStatus(const StatusInput& in) {
  const InferenceDeployment& d = *in.deployment;
  const InferenceDeploymentSpec& spec = d.spec;
  const RolloutPlan& plan = in.plan;
  const Json& old = d.status;
  int replicas = spec.replicas;

  int existing = 0;
  std::string current_revision = in.update_revision;
  Json groups = Json::array();
  for (const GroupObservation& g : in.groups) {
    if (!g.exists) continue;
    ++existing;
    if (g.index < replicas && !plan.complete && g.revision != in.update_revision &&
        current_revision == in.update_revision && !g.revision.empty()) {
      current_revision = g.revision;
    }
  }
  for (int i = 0; i < replicas; ++i) {
    Json entry = {{"index", i}, {"ready", false}, {"restarts", 0}};
    for (const GroupObservation& g : in.groups) {
      if (g.index == i && g.exists) {
        entry["ready"] = g.ready;
        entry["revision"] = g.revision;
      }
    }
    if (auto it = in.records.find(i); it != in.records.end()) {
      const GroupRecord& r = it->second;
      entry["restarts"] = r.restarts;
      if (!r.last_failure.empty()) entry["lastFailure"] = r.last_failure;
      if (!r.last_restart_time.empty()) entry["lastRestartTime"] = r.last_restart_time;
    }
    groups.push_back(entry);
  }

  Json status = {{"observedGeneration", d.generation},
                 {"replicas", existing},
                 {"readyReplicas", plan.ready},
                 {"updatedReplicas", plan.updated},
                 {"selector", SchedulerSelector(d.name)},
                 {"currentRevision", current_revision},
                 {"updateRevision", in.update_revision},
                 {"url", absl::StrCat("http://", d.name, ".", d.ns, ".svc:", spec.service.port)},
                 {"groups", groups}};
  if (spec.ingress.enabled && !spec.ingress.host.empty()) {
    status["url"] =
        absl::StrCat(spec.ingress.tls_secret_name.empty() ? "http://" : "https://",
                     spec.ingress.host, spec.ingress.path == "/" ? "" : spec.ingress.path);
  }

  const int64_t gen = d.generation;
  Json conditions = Json::array();
  int min_available =
      spec.rollout.type == "Recreate" ? 1 : std::max(1, replicas - spec.rollout.max_unavailable);
  std::string ready_text = absl::StrCat(plan.ready, " of ", replicas, " serving groups ready");
  if (replicas == 0) {
    conditions.push_back(Condition(old, "Available", false, "ScaledToZero",
                                   "spec.replicas is 0: no serving group runs", gen, in.now));
  } else if (plan.ready >= min_available) {
    conditions.push_back(
        Condition(old, "Available", true, "MinimumGroupsReady", ready_text, gen, in.now));
  } else {
    conditions.push_back(
        Condition(old, "Available", false, "GroupsNotReady",
                  absl::StrCat(ready_text, " (need ", min_available,
                               "); a group is ready when its scheduler reports /ready, i.e. all ",
                               WorldSize(spec.parallelism),
                               " ranks joined and initialised. Inspect: kubectl get pods -l ",
                               kLabelDeployment, "=", d.name),
                  gen, in.now));
  }

  if (plan.complete) {
    conditions.push_back(Condition(
        old, "Progressing", false, "RolloutComplete",
        absl::StrCat("all ", replicas, " serving groups run revision ", in.update_revision), gen,
        in.now));
  } else {
    std::string reason = existing < replicas       ? "ScalingUp"
                         : !plan.remove.empty()    ? "ScalingDown"
                         : plan.updated < replicas ? "RollingUpdate"
                                                   : "WaitingForReadiness";
    conditions.push_back(Condition(
        old, "Progressing", true, reason,
        absl::StrCat(
            plan.updated, " of ", replicas, " serving groups updated to revision ",
            in.update_revision, ", ", plan.unavailable, " unavailable (maxUnavailable ",
            spec.rollout.type == "Recreate" ? replicas : spec.rollout.max_unavailable, ")",
            plan.remove.empty() ? "" : absl::StrCat(", ", plan.remove.size(), " to remove")),
        gen, in.now));
  }

  if (in.degraded) {
    conditions.push_back(
        Condition(old, "Degraded", true, in.degraded->reason, in.degraded->message, gen, in.now));
  } else {
    conditions.push_back(
        Condition(old, "Degraded", false, "AsExpected", "no failures", gen, in.now));
  }

  if (in.scaling) {
    conditions.push_back(Condition(old, "ScalingReady", false, in.scaling->reason,
                                   in.scaling->message, gen, in.now));
  } else if (!spec.autoscaling.enabled) {
    conditions.push_back(Condition(old, "ScalingReady", true, "AutoscalingDisabled",
                                   "the number of groups is set by spec.replicas", gen, in.now));
  } else {
    const AutoscalingSpec& a = spec.autoscaling;
    conditions.push_back(Condition(
        old, "ScalingReady", true, "AutoscalerConfigured",
        absl::StrCat(a.backend == "KEDA" ? "KEDA ScaledObject " : "HorizontalPodAutoscaler ",
                     d.name, " scales between ", a.min_replicas, " and ",
                     a.max_replicas.value_or(a.min_replicas), " groups on ", a.metric, " (target ",
                     a.target, " per group)"),
        gen, in.now));
  }
  const InferencePoolSpec& pool = spec.routing.inference_pool;
  if (in.routing) {
    conditions.push_back(Condition(old, "RoutingReady", false, in.routing->reason,
                                   in.routing->message, gen, in.now));
  } else if (!pool.enabled) {
    conditions.push_back(Condition(old, "RoutingReady", true, "InferencePoolDisabled",
                                   "clients reach the groups through Service " + d.name, gen,
                                   in.now));
  } else {
    conditions.push_back(Condition(
        old, "RoutingReady", true, "InferencePoolConfigured",
        absl::StrCat("InferencePool ", d.name, " selects the scheduler pods on port ", kHttpPort,
                     pool.endpoint_picker
                         ? absl::StrCat(", endpoint picker Service ", pool.endpoint_picker->name)
                         : ""),
        gen, in.now));
  }

  if (!in.blocked.empty()) {
    conditions.push_back(Condition(old, "PodsBlocked", true, in.blocked.front().reason,
                                   BlockedPodsMessage(in.blocked), gen, in.now));
  } else {
    conditions.push_back(Condition(old, "PodsBlocked", false, "NoBlockedPods",
                                   "every pod is scheduled and its containers can start", gen,
                                   in.now));
  }
  status["conditions"] = conditions;
  return status;
}

std::string BlockedPodsMessage(const std::vector<BlockedPod>& blocked) {
  constexpr size_t kShown = kBlockedPodsShown;
  std::string msg;
  for (size_t i = 0; i < blocked.size() && i < kShown; ++i) {
    const BlockedPod& b = blocked[i];
    absl::StrAppend(&msg, i == 0 ? "" : "; ", "pod ", b.pod, " (group ", b.group, ") ", b.reason,
                    ": ", b.message);
  }
  if (blocked.size() > kShown) {
    absl::StrAppend(&msg, "; and ", blocked.size() - kShown, " more blocked pod(s)");
  }
  absl::StrAppend(&msg, ". Inspect: kubectl describe pod ", blocked.empty() ? "" : blocked[0].pod);
  return msg;
}

Json InvalidSpecStatus(const Json& stored_status, int64_t generation, const std::string& message,
                       absl::Time now) {
  Json status = stored_status.is_object() ? stored_status : Json::object();
  Json conditions = Json::array();
  if (status.contains("conditions") && status["conditions"].is_array()) {
    for (const Json& c : status["conditions"]) {
      if (c.value("type", "") != "Degraded") conditions.push_back(c);
    }
  }
  conditions.push_back(Condition(stored_status, "Degraded", true, "InvalidSpec",
                                 absl::StrCat(message, "; fix the spec and re-apply"), generation,
                                 now));
  status["conditions"] = conditions;
  status["observedGeneration"] = generation;
  return status;
}

bool StatusDiffers(const Json& a, const Json& b) {
  return StripTimestamps(a) != StripTimestamps(b);
}

}  // namespace orca::controller
