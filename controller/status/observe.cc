#include "controller/status/observe.h"

#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
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

}  // namespace

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

bool ContainsAll(const Json& live, const Json& desired) {
  if (desired.is_object()) {
    if (!live.is_object()) return false;
    for (const auto& [k, v] : desired.items()) {
      if (!live.contains(k) || !ContainsAll(live[k], v)) return false;
    }
    return true;
  }
  if (desired.is_array()) {
    if (!live.is_array() || live.size() != desired.size()) return false;
    for (size_t i = 0; i < desired.size(); ++i) {
      if (!ContainsAll(live[i], desired[i])) return false;
    }
    return true;
  }
  return live == desired;
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
