#include "controller/status/observe.h"

#include <algorithm>
#include <map>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "controller/api/quantity.h"
#include "controller/builders/layout.h"

namespace orca::controller {
namespace {

bool Terminating(const Json& o) {
  return o.contains("metadata") && o["metadata"].contains("deletionTimestamp");
}

int64_t IntAt(const Json& o, const char* a, const char* b, int64_t def) {
  if (!o.contains(a) || !o[a].is_object() || !o[a].contains(b) || !o[a][b].is_number_integer()) {
    return def;
  }
  return o[a][b].get<int64_t>();
}

bool WorkloadObserved(const Json& w) {
  return IntAt(w, "status", "observedGeneration", 0) >= IntAt(w, "metadata", "generation", 0);
}

// Returns a description of why `pod` counts as failed, or "".
std::string PodFailure(const Json& pod) {
  std::string name = pod["metadata"].value("name", "");
  if (!pod.contains("status") || !pod["status"].is_object()) return "";
  const Json& st = pod["status"];
  if (st.value("phase", "") == "Failed") {
    return absl::StrCat("pod ", name, " failed: ", st.value("reason", "unknown reason"), " ",
                        st.value("message", ""));
  }
  if (!st.contains("containerStatuses") || !st["containerStatuses"].is_array()) return "";
  for (const Json& cs : st["containerStatuses"]) {
    int restarts = cs.value("restartCount", 0);
    if (restarts <= 0) continue;
    std::string detail;
    if (cs.contains("lastState") && cs["lastState"].contains("terminated")) {
      const Json& t = cs["lastState"]["terminated"];
      detail = absl::StrCat(" (last exit code ", t.value("exitCode", 0), ", ",
                            t.value("reason", "no reason"), ")");
    }
    return absl::StrCat("pod ", name, " container ", cs.value("name", "?"), " restarted ", restarts,
                        " time(s)", detail);
  }
  return "";
}

// Waiting reasons of a container that will not start without a change by someone.
bool BlockingWaitingReason(const std::string& reason) {
  static const char* const kReasons[] = {
      "ErrImagePull",      "ImagePullBackOff",           "InvalidImageName",
      "ErrImageNeverPull", "CreateContainerConfigError", "CreateContainerError",
      "RunContainerError", "PreCreateHookError",         "PreStartHookError"};
  for (const char* r : kReasons) {
    if (reason == r) return true;
  }
  return false;
}

absl::Time Rfc3339(const Json& o, const char* field) {
  absl::Time t;
  std::string err;
  if (!o.contains("metadata") || !o["metadata"].contains(field) ||
      !o["metadata"][field].is_string() ||
      !absl::ParseTime(absl::RFC3339_full, o["metadata"][field].get<std::string>(), &t, &err)) {
    return absl::InfiniteFuture();
  }
  return t;
}

// Returns why `pod` cannot start, or nullopt.
std::optional<BlockedPod> PodBlocked(const Json& pod, absl::Time now) {
  if (!pod.contains("status") || !pod["status"].is_object()) return std::nullopt;
  const Json& st = pod["status"];
  BlockedPod b;
  b.pod = pod["metadata"].value("name", "");
  b.group = LabelInt(pod, kLabelGroup);
  if (st.contains("conditions") && st["conditions"].is_array()) {
    for (const Json& c : st["conditions"]) {
      if (c.value("type", "") == "PodScheduled" && c.value("status", "") == "False") {
        b.reason = c.value("reason", "Unschedulable");
        b.message = c.value("message", "the pod cannot be scheduled");
        return b;
      }
    }
  }
  for (const char* list : {"initContainerStatuses", "containerStatuses"}) {
    if (!st.contains(list) || !st[list].is_array()) continue;
    for (const Json& cs : st[list]) {
      if (!cs.contains("state") || !cs["state"].contains("waiting")) continue;
      const Json& w = cs["state"]["waiting"];
      std::string reason = w.value("reason", "");
      std::string container = cs.value("name", "?");
      if (BlockingWaitingReason(reason)) {
        b.reason = reason;
        b.message = absl::StrCat("container ", container, ": ", w.value("message", reason));
        return b;
      }
      if ((reason == "ContainerCreating" || reason == "PodInitializing") &&
          now - Rfc3339(pod, "creationTimestamp") >= kContainerCreatingLimit) {
        b.reason = "ContainerCreating";
        b.message = absl::StrCat(
            "container ", container, " has been in ", reason, " for ",
            absl::ToInt64Minutes(now - Rfc3339(pod, "creationTimestamp")),
            " min; a volume that cannot be mounted shows as FailedMount in `kubectl describe "
            "pod ",
            b.pod, "`");
        return b;
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::vector<BlockedPod> ObserveBlockedPods(const OwnedObjects& owned, absl::Time now) {
  std::vector<BlockedPod> out;
  for (const Json& pod : owned.pods) {
    if (Terminating(pod)) continue;
    if (std::optional<BlockedPod> b = PodBlocked(pod, now)) out.push_back(std::move(*b));
  }
  std::sort(out.begin(), out.end(),
            [](const BlockedPod& a, const BlockedPod& b) { return a.pod < b.pod; });
  return out;
}

int LabelInt(const Json& object, const char* key) {
  std::string v = Label(object, key);
  int out;
  if (v.empty() || !absl::SimpleAtoi(v, &out)) return -1;
  return out;
}

std::string Label(const Json& object, const char* key) {
  if (!object.contains("metadata") || !object["metadata"].contains("labels")) return "";
  const Json& labels = object["metadata"]["labels"];
  if (!labels.is_object() || !labels.contains(key) || !labels[key].is_string()) return "";
  return labels[key].get<std::string>();
}

namespace {

// What the values under a key are: plain JSON, a map of resource quantities
// (resources.limits / requests), or one quantity.
enum class Values { kPlain, kQuantityMap, kQuantity };

Values ValuesUnder(Values parent, const std::string& key) {
  if (parent == Values::kQuantityMap) return Values::kQuantity;
  if (key == "limits" || key == "requests") return Values::kQuantityMap;
  if (key == "sizeLimit" || key == "averageValue") return Values::kQuantity;
  return Values::kPlain;
}

bool Contains(const Json& live, const Json& desired, Values values) {
  if (desired.is_object()) {
    if (!live.is_object()) return false;
    for (const auto& [k, v] : desired.items()) {
      if (!live.contains(k) || !Contains(live[k], v, ValuesUnder(values, k))) return false;
    }
    return true;
  }
  if (desired.is_array()) {
    if (!live.is_array() || live.size() != desired.size()) return false;
    for (size_t i = 0; i < desired.size(); ++i) {
      if (!Contains(live[i], desired[i], Values::kPlain)) return false;
    }
    return true;
  }
  // The API server stores quantities canonically: `nvidia.com/gpu: 1` reads back as "1".
  if (values == Values::kQuantity) return SameQuantity(live, desired);
  return live == desired;
}

}  // namespace

bool SameQuantity(const Json& a, const Json& b) {
  if (a == b) return true;
  auto canonical = [](const Json& v) -> absl::StatusOr<std::string> {
    // A JSON number is read as its text, as resource.Quantity's UnmarshalJSON does.
    return v.is_number() ? CanonicalQuantity(v.dump()) : CanonicalQuantity(v);
  };
  absl::StatusOr<std::string> ca = canonical(a);
  absl::StatusOr<std::string> cb = canonical(b);
  return ca.ok() && cb.ok() && *ca == *cb;
}

bool ContainsAll(const Json& live, const Json& desired) {
  return Contains(live, desired, Values::kPlain);
}

std::vector<GroupObservation> ObserveGroups(const OwnedObjects& owned) {
  struct Acc {
    GroupObservation obs;
    bool revisions_agree = true;
    bool observed = true;
    int64_t expected_pods = 0;
    bool has_scheduler = false;
  };
  std::map<int, Acc> groups;
  auto add_workload = [&](const Json& w, bool scheduler) {
    int g = LabelInt(w, kLabelGroup);
    if (g < 0 || Terminating(w)) return;
    Acc& a = groups[g];
    a.obs.index = g;
    std::string rev = Label(w, kLabelRevision);
    if (!a.obs.exists) {
      a.obs.revision = rev;
    } else if (a.obs.revision != rev) {
      a.revisions_agree = false;
    }
    a.obs.exists = true;
    a.observed = a.observed && WorkloadObserved(w);
    a.expected_pods += IntAt(w, "spec", "replicas", 1);
    if (scheduler) {
      a.has_scheduler = true;
      a.obs.ready = IntAt(w, "status", "readyReplicas", 0) >= 1;
    }
  };
  for (const Json& d : owned.deployments) add_workload(d, true);
  for (const Json& s : owned.stateful_sets) add_workload(s, false);

  std::map<int, int64_t> current_pods;
  std::map<int, bool> stale_pods;
  for (const Json& pod : owned.pods) {
    int g = LabelInt(pod, kLabelGroup);
    auto it = groups.find(g);
    if (it == groups.end() || Terminating(pod)) continue;
    Acc& a = it->second;
    if (Label(pod, kLabelRevision) == a.obs.revision) {
      ++current_pods[g];
      if (a.obs.failure.empty()) {
        a.obs.failure = PodFailure(pod);
        if (!a.obs.failure.empty()) a.obs.failed_pod = pod["metadata"].value("name", "");
      }
    } else {
      stale_pods[g] = true;
    }
  }
  std::vector<GroupObservation> out;
  for (auto& [g, a] : groups) {
    if (!a.revisions_agree) a.obs.revision.clear();
    a.obs.pods_updated = a.revisions_agree && a.observed && a.has_scheduler && !stale_pods[g] &&
                         current_pods[g] >= a.expected_pods;
    if (!a.has_scheduler) a.obs.ready = false;
    out.push_back(a.obs);
  }
  return out;
}

}  // namespace orca::controller
