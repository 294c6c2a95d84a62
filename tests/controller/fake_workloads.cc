// The fake API server's stand-in for the Deployment and StatefulSet controllers and
// the kubelet: pods for workloads, pod readiness, workload status.
#include <httplib.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "tests/controller/fake_api_server.h"

namespace orca::controller::testing {
namespace {

std::string TemplateHash(const Json& tmpl) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : tmpl.dump()) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return absl::StrFormat("%08x", h & 0xffffffffull);
}

bool ControlledBy(const Json& pod, const std::string& uid) {
  if (!pod["metadata"].contains("ownerReferences")) return false;
  for (const Json& r : pod["metadata"]["ownerReferences"]) {
    if (r.value("uid", "") == uid) return true;
  }
  return false;
}

Json PodStatus(const Json& spec, bool ready) {
  Json containers = Json::array();
  if (spec.contains("containers")) {
    for (const Json& c : spec["containers"]) {
      containers.push_back({{"name", c.value("name", "")}, {"ready", ready}, {"restartCount", 0}});
    }
  }
  return Json{
      {"phase", "Running"},
      {"conditions", Json::array({{{"type", "Ready"}, {"status", ready ? "True" : "False"}}})},
      {"containerStatuses", containers}};
}

bool PodTerminating(const Json& pod) { return pod["metadata"].contains("deletionTimestamp"); }

bool PodReady(const Json& pod) {
  if (!pod.contains("status") || !pod["status"].contains("conditions")) return false;
  for (const Json& c : pod["status"]["conditions"]) {
    if (c.value("type", "") == "Ready") return c.value("status", "") == "True";
  }
  return false;
}

}  // namespace

Json FakeApiServer::NewPod(const Json& owner, const std::string& name, const Json& tmpl,
                           const std::string& owner_kind, int index) {
  Json labels = tmpl.contains("metadata") && tmpl["metadata"].contains("labels")
                    ? tmpl["metadata"]["labels"]
                    : Json::object();
  if (owner_kind == "StatefulSet") {
    labels["apps.kubernetes.io/pod-index"] = std::to_string(index);
    labels["statefulset.kubernetes.io/pod-name"] = name;
    labels["controller-revision-hash"] = TemplateHash(tmpl);
  } else {
    labels["pod-template-hash"] = TemplateHash(tmpl);
  }
  Json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", name},
                {"namespace", owner["metadata"]["namespace"]},
                {"labels", labels},
                {"uid", absl::StrFormat("00000000-0000-4000-9000-%012d", ++uid_counter_)},
                {"creationTimestamp",
                 absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone())},
                {"ownerReferences", Json::array({{{"apiVersion", "apps/v1"},
                                                  {"kind", owner_kind},
                                                  {"name", owner["metadata"]["name"]},
                                                  {"uid", owner["metadata"]["uid"]},
                                                  {"controller", true}}})}}},
              {"spec", tmpl.contains("spec") ? tmpl["spec"] : Json::object()}};
  bool ready = pod_ready_ ? pod_ready_(pod) : true;
  pod["status"] = PodStatus(pod["spec"], ready);
  return pod;
}

void FakeApiServer::SimulateLocked() {
  if (!options_.simulate_workloads || simulating_) return;
  simulating_ = true;
  for (int pass = 0; pass < 5; ++pass) {
    bool changed = false;
    std::vector<Key> workloads;
    for (const auto& [k, o] : objects_) {
      if (k.plural == "apps/v1/deployments" || k.plural == "apps/v1/statefulsets") {
        workloads.push_back(k);
      }
    }
    for (const Key& k : workloads) {
      if (!objects_.count(k)) continue;
      changed |= k.plural == "apps/v1/deployments" ? SimulateDeployment(k) : SimulateStatefulSet(k);
    }
    if (!changed) break;
  }
  simulating_ = false;
}

std::vector<FakeApiServer::Key> FakeApiServer::PodsIn(const std::string& ns) const {
  std::vector<Key> out;
  for (auto it = objects_.lower_bound(Key{"pods", ns, ""});
       it != objects_.end() && it->first.plural == "pods" && it->first.ns == ns; ++it) {
    out.push_back(it->first);
  }
  return out;
}

void FakeApiServer::SimulateAfterWrite(const std::string& plural, const Json& object) {
  if (!options_.simulate_workloads || simulating_ || !object.is_object() ||
      !object.contains("metadata")) {
    return;
  }
  std::string ns = object["metadata"].value("namespace", "");
  if (plural == "apps/v1/deployments" || plural == "apps/v1/statefulsets") {
    SimulateOne(Key{plural, ns, object["metadata"].value("name", "")});
  } else if (plural == "pods" && object["metadata"].contains("ownerReferences")) {
    for (const Json& ref : object["metadata"]["ownerReferences"]) {
      std::string kind = ref.value("kind", "");
      if (kind == "Deployment") SimulateOne(Key{"apps/v1/deployments", ns, ref.value("name", "")});
      if (kind == "StatefulSet")
        SimulateOne(Key{"apps/v1/statefulsets", ns, ref.value("name", "")});
    }
  }
}

void FakeApiServer::SimulateOne(const Key& k) {
  simulating_ = true;
  for (int pass = 0; pass < 3 && objects_.count(k); ++pass) {
    bool changed =
        k.plural == "apps/v1/deployments" ? SimulateDeployment(k) : SimulateStatefulSet(k);
    if (!changed) break;
  }
  simulating_ = false;
}

bool FakeApiServer::SimulateDeployment(const Key& k) {
  Json d = objects_[k];
  std::string uid = d["metadata"].value("uid", "");
  const Json tmpl = d["spec"].value("template", Json::object());
  std::string hash = TemplateHash(tmpl);
  int replicas = d["spec"].value("replicas", 1);
  bool changed = false;
  std::vector<Key> current;
  std::vector<Key> pods;
  for (const Key& pk : PodsIn(k.ns)) {
    if (ControlledBy(objects_[pk], uid)) pods.push_back(pk);
  }
  for (const Key& pk : pods) {
    const Json& p = objects_[pk];
    if (PodTerminating(p)) continue;
    std::string h = p["metadata"]["labels"].value("pod-template-hash", "");
    if (h != hash || static_cast<int>(current.size()) >= replicas) {
      RequestDelete(pk);  // Recreate: old pods go before new ones come
      changed = true;
    } else {
      current.push_back(pk);
    }
  }
  for (int i = static_cast<int>(current.size()); i < replicas; ++i) {
    std::string name =
        absl::StrCat(k.name, "-", hash, "-", absl::StrFormat("%05d", uid_counter_ + 1));
    Key pk{"pods", k.ns, name};
    Put(pk, NewPod(d, name, tmpl, "Deployment", i), "ADDED");
    current.push_back(pk);
    changed = true;
  }
  for (const Key& pk : current) {
    Json p = objects_[pk];
    bool ready = pod_ready_ ? pod_ready_(p) : true;
    if (PodReady(p) != ready) {
      p["status"]["conditions"] =
          Json::array({{{"type", "Ready"}, {"status", ready ? "True" : "False"}}});
      Put(pk, p, "MODIFIED");
      changed = true;
    }
  }
  UpdateWorkloadStatus(k, "Deployment");
  return changed;
}

bool FakeApiServer::SimulateStatefulSet(const Key& k) {
  Json s = objects_[k];
  std::string uid = s["metadata"].value("uid", "");
  const Json tmpl = s["spec"].value("template", Json::object());
  int replicas = s["spec"].value("replicas", 1);
  bool on_delete = s["spec"].contains("updateStrategy") &&
                   s["spec"]["updateStrategy"].value("type", "") == "OnDelete";
  std::string hash = TemplateHash(tmpl);
  bool changed = false;
  for (int i = 0; i < replicas; ++i) {
    std::string name = absl::StrCat(k.name, "-", i);
    Key pk{"pods", k.ns, name};
    auto it = objects_.find(pk);
    if (it != objects_.end() && PodTerminating(it->second)) continue;  // replaced once gone
    bool stale = it != objects_.end() && !on_delete &&
                 it->second["metadata"]["labels"].value("controller-revision-hash", "") != hash;
    if (stale && options_.graceful_pod_deletion) {
      RequestDelete(pk);
      changed = true;
      continue;
    }
    if (it == objects_.end() || stale) {
      if (stale) Remove(pk);
      Put(pk, NewPod(s, name, tmpl, "StatefulSet", i), "ADDED");
      changed = true;
    }
  }
  std::vector<Key> extra;
  for (const Key& pk : PodsIn(k.ns)) {
    const Json& p = objects_[pk];
    if (!ControlledBy(p, uid) || PodTerminating(p)) continue;
    int index = std::stoi(p["metadata"]["labels"].value("apps.kubernetes.io/pod-index", "0"));
    if (index >= replicas) extra.push_back(pk);
  }
  for (const Key& pk : extra) {
    RequestDelete(pk);
    changed = true;
  }
  for (int i = 0; i < replicas; ++i) {
    Key pk{"pods", k.ns, absl::StrCat(k.name, "-", i)};
    if (!objects_.count(pk) || PodTerminating(objects_[pk])) continue;
    Json p = objects_[pk];
    bool ready = pod_ready_ ? pod_ready_(p) : true;
    if (PodReady(p) != ready) {
      p["status"]["conditions"] =
          Json::array({{{"type", "Ready"}, {"status", ready ? "True" : "False"}}});
      Put(pk, p, "MODIFIED");
      changed = true;
    }
  }
  UpdateWorkloadStatus(k, "StatefulSet");
  return changed;
}

void FakeApiServer::UpdateWorkloadStatus(const Key& k, const std::string& kind) {
  Json w = objects_[k];
  std::string uid = w["metadata"].value("uid", "");
  std::string hash = TemplateHash(w["spec"].value("template", Json::object()));
  const char* hash_label = kind == "StatefulSet" ? "controller-revision-hash" : "pod-template-hash";
  int total = 0, ready = 0, updated = 0;
  for (const Key& pk : PodsIn(k.ns)) {
    const Json& p = objects_[pk];
    if (!ControlledBy(p, uid) || PodTerminating(p)) continue;
    ++total;
    if (PodReady(p)) ++ready;
    if (p["metadata"]["labels"].value(hash_label, "") == hash) ++updated;
  }
  Json status = {{"observedGeneration", w["metadata"].value("generation", 1)},
                 {"replicas", total},
                 {"readyReplicas", ready},
                 {"availableReplicas", ready},
                 {"updatedReplicas", updated}};
  if (kind == "StatefulSet") {
    status["currentReplicas"] = updated;
    status["updateRevision"] = absl::StrCat(k.name, "-", hash);
  }
  if (w.contains("status") && w["status"] == status) return;
  w["status"] = status;
  Put(k, w, "MODIFIED");
}

}  // namespace orca::controller::testing
