#include "tests/controller/fake_api_server.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "controller/api/quantity.h"
#include "controller/api/yaml.h"
#include "controller/client/kube_errors.h"

namespace orca::controller::testing {
namespace {

std::string Escape(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

// Flattens to leaf paths (JSON pointers); arrays and empty objects are leaves.
void Flatten(const Json& v, const std::string& prefix, std::map<std::string, Json>& out) {
  if (v.is_object() && !v.empty()) {
    for (const auto& [k, child] : v.items()) Flatten(child, prefix + "/" + Escape(k), out);
  } else {
    out[prefix] = v;
  }
}

bool IdentityPath(const std::string& p) {
  return p == "/apiVersion" || p == "/kind" || p == "/metadata/name" ||
         p == "/metadata/namespace" || p.rfind("/metadata/resourceVersion", 0) == 0 ||
         p.rfind("/metadata/uid", 0) == 0 || p.rfind("/metadata/generation", 0) == 0 ||
         p.rfind("/metadata/creationTimestamp", 0) == 0 ||
         p.rfind("/metadata/managedFields", 0) == 0;
}

std::map<std::string, Json> Leaves(const Json& obj, bool drop_status) {
  std::map<std::string, Json> all;
  Flatten(obj, "", all);
  std::map<std::string, Json> out;
  for (auto& [p, v] : all) {
    if (IdentityPath(p) || (drop_status && p.rfind("/status", 0) == 0)) continue;
    out[p] = v;
  }
  return out;
}

Json ValueAt(const Json& obj, const std::string& path) {
  Json::json_pointer ptr(path);
  return obj.contains(ptr) ? obj[ptr] : Json();
}

std::string NowString() {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone());
}

std::string ShortHash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return absl::StrFormat("%08x", h & 0xffffffffull);
}

std::string Uid(const Json& o) { return o["metadata"].value("uid", ""); }

bool OwnedByUid(const Json& o, const std::string& uid) {
  if (!o["metadata"].contains("ownerReferences")) return false;
  for (const Json& r : o["metadata"]["ownerReferences"]) {
    if (r.value("uid", "") == uid) return true;
  }
  return false;
}

// Returns `v` with every resource quantity (values under `limits` and `requests`,
// `sizeLimit`, `averageValue`) as the canonical string the API server stores:
// `nvidia.com/gpu: 1` reads back as "1", "1024Mi" as "1Gi".
Json CanonicalQuantities(Json v, bool quantity_map = false) {
  if (v.is_object()) {
    for (auto& [k, child] : v.items()) {
      if (quantity_map || k == "sizeLimit" || k == "averageValue") {
        if (child.is_string() || child.is_number()) {
          absl::StatusOr<std::string> c =
              child.is_number() ? CanonicalQuantity(child.dump()) : CanonicalQuantity(child);
          if (c.ok()) child = *c;
          continue;
        }
      }
      child = CanonicalQuantities(std::move(child), k == "limits" || k == "requests");
    }
  } else if (v.is_array()) {
    for (Json& e : v) e = CanonicalQuantities(std::move(e));
  }
  return v;
}

}  // namespace

FakeApiServer::FakeApiServer(FakeApiServerOptions options) : options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<FakeApiServer>> FakeApiServer::Start(FakeApiServerOptions options) {
  std::unique_ptr<FakeApiServer> s(new FakeApiServer(std::move(options)));
  s->server_ = std::make_unique<httplib::Server>();
  s->server_->new_task_queue = [] { return new httplib::ThreadPool(64); };
  s->server_->set_tcp_nodelay(true);
  FakeApiServer* self = s.get();
  auto route = [self](const char* method) {
    return [self, method](const httplib::Request& req, httplib::Response& res) {
      self->Handle(method, &req, &res);
    };
  };
  const char* pattern = R"(/apis?/.*)";
  s->server_->Get(pattern, route("GET"));
  s->server_->Post(pattern, route("POST"));
  s->server_->Put(pattern, route("PUT"));
  s->server_->Patch(pattern, route("PATCH"));
  s->server_->Delete(pattern, route("DELETE"));
  s->port_ = s->server_->bind_to_any_port("127.0.0.1");
  if (s->port_ <= 0) return absl::UnavailableError("fake API server: cannot bind 127.0.0.1");
  httplib::Server* raw = s->server_.get();
  s->thread_ = std::thread([raw] { raw->listen_after_bind(); });
  while (!raw->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return s;
}

FakeApiServer::~FakeApiServer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

std::string FakeApiServer::url() const { return absl::StrCat("http://127.0.0.1:", port_); }

const FakeApiServer::ResourceInfo* FakeApiServer::Info(const std::string& plural) const {
  static const std::map<std::string, ResourceInfo> kInfos = {
      {"configmaps", {"v1", "ConfigMap", false}},
      {"services", {"v1", "Service", true}},
      {"pods", {"v1", "Pod", true}},
      {"events", {"v1", "Event", false}},
      {"apps/v1/deployments", {"apps/v1", "Deployment", true}},
      {"apps/v1/statefulsets", {"apps/v1", "StatefulSet", true}},
      {"networking.k8s.io/v1/ingresses", {"networking.k8s.io/v1", "Ingress", true}},
      {"autoscaling/v2/horizontalpodautoscalers",
       {"autoscaling/v2", "HorizontalPodAutoscaler", true}},
      {"keda.sh/v1alpha1/scaledobjects", {"keda.sh/v1alpha1", "ScaledObject", true}},
      {"inference.networking.k8s.io/v1/inferencepools",
       {"inference.networking.k8s.io/v1", "InferencePool", true}},
      {"coordination.k8s.io/v1/leases", {"coordination.k8s.io/v1", "Lease", false}},
      {"serving.orca.dev/v1alpha1/inferencedeployments",
       {"serving.orca.dev/v1alpha1", "InferenceDeployment", true}},
  };
  auto it = kInfos.find(plural);
  if (it == kInfos.end()) return nullptr;
  std::string last = plural.substr(plural.rfind('/') + 1);
  if (options_.unserved.count(last)) return nullptr;
  return &it->second;
}

Json FakeApiServer::Stored(const Key& k) const {
  auto it = objects_.find(k);
  return it == objects_.end() ? Json() : it->second;
}

void FakeApiServer::Put(const Key& k, Json object, const std::string& type) {
  object = CanonicalQuantities(std::move(object));
  object["metadata"]["resourceVersion"] = std::to_string(++rv_);
  objects_[k] = object;
  uids_.insert(object["metadata"].value("uid", ""));
  if (write_observer_) write_observer_(k.plural, object);
  history_.push_back(Event{rv_, k.plural, k.ns, type, object});
  if (history_.size() > options_.history_limit) {
    size_t drop = history_.size() - options_.history_limit;
    compacted_rv_ = history_[drop - 1].rv;
    history_.erase(history_.begin(), history_.begin() + static_cast<long>(drop));
  }
  cv_.notify_all();
}

void FakeApiServer::Remove(const Key& k) {
  auto it = objects_.find(k);
  if (it == objects_.end()) return;
  Json obj = it->second;
  objects_.erase(it);
  owners_.erase(k);
  uids_.erase(Uid(obj));
  obj["metadata"]["resourceVersion"] = std::to_string(++rv_);
  history_.push_back(Event{rv_, k.plural, k.ns, "DELETED", obj});
  cv_.notify_all();
  Cascade(Uid(obj));
}

void FakeApiServer::RequestDelete(const Key& k) {
  auto it = objects_.find(k);
  if (it == objects_.end()) return;
  if (k.plural != "pods" || !options_.graceful_pod_deletion) {
    Remove(k);
    return;
  }
  Json pod = it->second;
  if (pod["metadata"].contains("deletionTimestamp")) return;  // already terminating
  int grace = 30;
  if (pod.contains("spec") && pod["spec"].is_object()) {
    grace = pod["spec"].value("terminationGracePeriodSeconds", 30);
  }
  pod["metadata"]["deletionTimestamp"] = absl::FormatTime(
      "%Y-%m-%dT%H:%M:%SZ", absl::Now() + absl::Seconds(grace), absl::UTCTimeZone());
  pod["metadata"]["deletionGracePeriodSeconds"] = grace;
  Put(k, pod, "MODIFIED");
}

absl::Status FakeApiServer::FinishTermination(const std::string& ns, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  Key k{"pods", ns, name};
  if (!objects_.count(k)) return absl::NotFoundError(name);
  Json gone = objects_[k];
  Remove(k);
  SimulateAfterWrite("pods", gone);
  return absl::OkStatus();
}

void FakeApiServer::Cascade(const std::string& uid) {
  if (uid.empty()) return;
  std::vector<Key> children;
  for (const auto& [k, o] : objects_) {
    if (OwnedByUid(o, uid)) children.push_back(k);
  }
  for (const Key& k : children) RequestDelete(k);
}

void FakeApiServer::CollectIfOrphan(const Key& k) {
  auto it = objects_.find(k);
  if (it == objects_.end() || !it->second["metadata"].contains("ownerReferences")) return;
  const Json& refs = it->second["metadata"]["ownerReferences"];
  if (!refs.is_array() || refs.empty()) return;
  for (const Json& ref : refs) {
    if (uids_.count(ref.value("uid", ""))) return;
  }
  Remove(k);
}

absl::Status FakeApiServer::Admit(const std::string& plural, const Json& obj) {
  if (validator_ && plural == "serving.orca.dev/v1alpha1/inferencedeployments") {
    return validator_(obj);
  }
  return absl::OkStatus();
}

void FakeApiServer::TrackOwnership(const Key& k, const Json& before, const Json& after,
                                   const std::string& manager) {
  std::map<std::string, Json> old_leaves = Leaves(before, false);
  auto& owners = owners_[k];
  for (auto& [p, v] : Leaves(after, false)) {
    auto it = old_leaves.find(p);
    if (it != old_leaves.end() && it->second == v) continue;
    for (auto& [m, paths] : owners) {
      if (m != manager) paths.erase(p);
    }
    owners[manager][p] = v;
  }
}

absl::StatusOr<Json> FakeApiServer::CreateLocked(const std::string& plural, const std::string& ns,
                                                 Json obj, const std::string& manager) {
  const ResourceInfo* info = Info(plural);
  if (!obj.is_object()) return absl::InvalidArgumentError("body is not an object");
  Json& meta = obj["metadata"];
  if (!meta.is_object()) meta = Json::object();
  std::string name = meta.value("name", "");
  if (name.empty() && meta.contains("generateName")) {
    name = absl::StrCat(meta["generateName"].get<std::string>(),
                        ShortHash(std::to_string(rv_)).substr(0, 5));
  }
  if (name.empty()) return absl::InvalidArgumentError("metadata.name: Required value");
  Key k{plural, ns, name};
  if (objects_.count(k)) {
    return absl::AlreadyExistsError(absl::StrCat(info->kind, " \"", name, "\" already exists"));
  }
  if (absl::Status s = Admit(plural, obj); !s.ok()) return s;
  meta["name"] = name;
  if (!ns.empty()) meta["namespace"] = ns;
  meta["uid"] = absl::StrFormat("00000000-0000-4000-8000-%012d", ++uid_counter_);
  meta["creationTimestamp"] = NowString();
  meta["generation"] = 1;
  obj["apiVersion"] = info->api_version;
  obj["kind"] = info->kind;
  obj = CanonicalQuantities(std::move(obj));
  TrackOwnership(k, Json::object(), obj, manager);
  Put(k, obj, "ADDED");
  return objects_[k];
}

absl::StatusOr<Json> FakeApiServer::UpdateLocked(const std::string& plural, const std::string& ns,
                                                 const std::string& name, Json obj,
                                                 bool status_only, const std::string& manager) {
  const ResourceInfo* info = Info(plural);
  Key k{plural, ns, name};
  auto it = objects_.find(k);
  if (it == objects_.end()) {
    return absl::NotFoundError(absl::StrCat(info->kind, " \"", name, "\" not found"));
  }
  const Json live = it->second;
  std::string want_rv =
      obj.contains("metadata") ? obj["metadata"].value("resourceVersion", "") : "";
  if (!want_rv.empty() && want_rv != live["metadata"].value("resourceVersion", "")) {
    return absl::AbortedError(absl::StrCat(
        "Operation cannot be fulfilled on ", info->kind, " \"", name,
        "\": the object has been modified; please apply your changes to the latest version and "
        "try again"));
  }
  Json next = live;
  if (status_only) {
    next["status"] = obj.contains("status") ? obj["status"] : Json();
  } else {
    Json status = live.contains("status") ? live["status"] : Json();
    next = CanonicalQuantities(obj);
    next["metadata"]["uid"] = live["metadata"]["uid"];
    next["metadata"]["creationTimestamp"] = live["metadata"]["creationTimestamp"];
    next["metadata"]["generation"] = live["metadata"]["generation"];
    next["metadata"]["name"] = name;
    next["metadata"]["namespace"] = ns;
    next["apiVersion"] = info->api_version;
    next["kind"] = info->kind;
    if (info->status_subresource) {
      if (status.is_null()) {
        next.erase("status");
      } else {
        next["status"] = status;
      }
    }
    if (absl::Status s = Admit(plural, next); !s.ok()) return s;
    if (ValueAt(next, "/spec") != ValueAt(live, "/spec")) {
      next["metadata"]["generation"] = live["metadata"].value("generation", 1) + 1;
    }
  }
  next["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"];
  next = CanonicalQuantities(std::move(next));
  if (next == live) return live;
  TrackOwnership(k, live, next, manager);
  Put(k, next, "MODIFIED");
  return objects_[k];
}

absl::StatusOr<Json> FakeApiServer::ApplyLocked(const std::string& plural, const std::string& ns,
                                                const std::string& name, const Json& config,
                                                const std::string& manager, bool force) {
  const ResourceInfo* info = Info(plural);
  if (!config.is_object()) return absl::InvalidArgumentError("apply patch is not an object");
  if (config.value("kind", "") != info->kind ||
      config.value("apiVersion", "") != info->api_version) {
    return absl::InvalidArgumentError(
        absl::StrCat("apply patch has kind ", config.value("kind", ""), ", want ", info->kind));
  }
  if (!config.contains("metadata") || config["metadata"].value("name", "") != name) {
    return absl::InvalidArgumentError("apply patch: metadata.name does not match the URL");
  }
  Key k{plural, ns, name};
  bool exists = objects_.count(k) > 0;
  Json live = exists ? objects_[k]
                     : Json{{"apiVersion", info->api_version},
                            {"kind", info->kind},
                            {"metadata", {{"name", name}, {"namespace", ns}}}};
  std::map<std::string, Json> applied = Leaves(config, info->status_subresource);
  auto& owners = owners_[k];
  if (!force) {
    std::vector<std::string> conflicts;
    for (const auto& [p, v] : applied) {
      for (const auto& [m, paths] : owners) {
        if (m != manager && paths.count(p) && ValueAt(live, p) != v) {
          conflicts.push_back(absl::StrCat(p, " (owned by ", m, ")"));
        }
      }
    }
    if (!conflicts.empty()) {
      std::string msg = "Apply failed with conflicts:";
      for (const auto& c : conflicts) absl::StrAppend(&msg, " ", c);
      return absl::AbortedError(msg);
    }
  }
  Json next = live;
  for (const auto& [p, v] : owners[manager]) {
    if (applied.count(p)) continue;
    bool shared = false;
    for (const auto& [m, paths] : owners) {
      if (m != manager && paths.count(p)) shared = true;
    }
    Json::json_pointer ptr(p);
    if (!shared && next.contains(ptr)) next[ptr.parent_pointer()].erase(ptr.back());
  }
  for (const auto& [p, v] : applied) next[Json::json_pointer(p)] = v;
  next = CanonicalQuantities(std::move(next));
  for (auto& [m, paths] : owners) {
    if (m == manager) continue;
    for (const auto& [p, v] : applied) {
      if (paths.count(p) && paths[p] != v) paths.erase(p);  // forced: ownership moves
    }
  }
  owners[manager] = applied;
  if (exists && next == live) return live;
  if (absl::Status s = Admit(plural, next); !s.ok()) return s;
  if (!exists) {
    next["metadata"]["uid"] = absl::StrFormat("00000000-0000-4000-8000-%012d", ++uid_counter_);
    next["metadata"]["creationTimestamp"] = NowString();
    next["metadata"]["generation"] = 1;
  } else if (ValueAt(next, "/spec") != ValueAt(live, "/spec")) {
    next["metadata"]["generation"] = live["metadata"].value("generation", 1) + 1;
  }
  next["metadata"]["managedFields"] = Json::array();
  for (const auto& [m, paths] : owners) {
    if (!paths.empty()) {
      next["metadata"]["managedFields"].push_back(
          {{"manager", m}, {"operation", "Apply"}, {"fieldsType", "FieldsV1"}});
    }
  }
  Put(k, next, exists ? "MODIFIED" : "ADDED");
  return objects_[k];
}

// ---- in-process API ----

absl::StatusOr<Json> FakeApiServer::Get(const std::string& plural, const std::string& ns,
                                        const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  Json o = Stored(Key{plural, ns, name});
  if (o.is_null())
    return absl::NotFoundError(absl::StrCat(plural, " ", ns, "/", name, " not found"));
  return o;
}

std::vector<Json> FakeApiServer::List(const std::string& plural, const std::string& ns) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Json> out;
  for (const auto& [k, o] : objects_) {
    if (k.plural == plural && (ns.empty() || k.ns == ns)) out.push_back(o);
  }
  return out;
}

absl::StatusOr<Json> FakeApiServer::Upsert(const std::string& plural, Json object) {
  std::lock_guard<std::mutex> lock(mu_);
  if (Info(plural) == nullptr) return absl::NotFoundError(plural);
  std::string ns = object["metadata"].value("namespace", "default");
  std::string name = object["metadata"].value("name", "");
  Json status = object.contains("status") ? object["status"] : Json();
  absl::StatusOr<Json> r;
  if (objects_.count(Key{plural, ns, name})) {
    object["metadata"].erase("resourceVersion");
    r = UpdateLocked(plural, ns, name, object, false, "user");
  } else {
    r = CreateLocked(plural, ns, object, "user");
  }
  if (r.ok() && !status.is_null()) {
    Json with_status = *r;
    with_status["status"] = status;
    with_status["metadata"].erase("resourceVersion");
    r = UpdateLocked(plural, ns, name, with_status, true, "user");
  }
  if (r.ok()) {
    CollectIfOrphan(Key{plural, ns, name});
    SimulateAfterWrite(plural, *r);
  }
  return r;
}

absl::StatusOr<Json> FakeApiServer::SetStatus(const std::string& plural, const std::string& ns,
                                              const std::string& name, Json status) {
  std::lock_guard<std::mutex> lock(mu_);
  absl::StatusOr<Json> r = UpdateLocked(
      plural, ns, name, Json{{"metadata", Json::object()}, {"status", status}}, true, "kubelet");
  if (r.ok()) SimulateAfterWrite(plural, *r);
  return r;
}

absl::Status FakeApiServer::Delete(const std::string& plural, const std::string& ns,
                                   const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  Key k{plural, ns, name};
  if (!objects_.count(k)) return absl::NotFoundError(name);
  Json gone = objects_[k];
  RequestDelete(k);
  SimulateAfterWrite(plural, gone);
  return absl::OkStatus();
}

absl::Status FakeApiServer::Scale(const std::string& ns, const std::string& name, int replicas) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string plural = "serving.orca.dev/v1alpha1/inferencedeployments";
  Json o = Stored(Key{plural, ns, name});
  if (o.is_null()) return absl::NotFoundError(name);
  o["spec"]["replicas"] = replicas;
  o["metadata"].erase("resourceVersion");
  return UpdateLocked(plural, ns, name, o, false, "horizontal-pod-autoscaler").status();
}

void FakeApiServer::DropWatches() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++drop_generation_;
  }
  cv_.notify_all();
}

void FakeApiServer::Compact() {
  std::lock_guard<std::mutex> lock(mu_);
  compacted_rv_ = rv_;
  history_.clear();
}

void FakeApiServer::FailNextRequests(int n, int http_status) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_next_ = n;
  fail_status_ = http_status;
}

void FakeApiServer::ConflictNextWrites(int n) {
  std::lock_guard<std::mutex> lock(mu_);
  conflict_next_ = n;
}

void FakeApiServer::SetLatency(absl::Duration latency) {
  std::lock_guard<std::mutex> lock(mu_);
  latency_ = latency;
}

void FakeApiServer::SetValidator(std::function<absl::Status(const Json&)> validator) {
  std::lock_guard<std::mutex> lock(mu_);
  validator_ = std::move(validator);
}

void FakeApiServer::SetPodReadiness(std::function<bool(const Json&)> ready) {
  std::lock_guard<std::mutex> lock(mu_);
  pod_ready_ = std::move(ready);
}

void FakeApiServer::SetWriteObserver(
    std::function<void(const std::string&, const Json&)> observer) {
  std::lock_guard<std::mutex> lock(mu_);
  write_observer_ = std::move(observer);
}

void FakeApiServer::Resimulate() {
  std::lock_guard<std::mutex> lock(mu_);
  SimulateLocked();
}

std::vector<RequestRecord> FakeApiServer::Requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

void FakeApiServer::ClearRequests() {
  std::lock_guard<std::mutex> lock(mu_);
  requests_.clear();
}

int64_t FakeApiServer::resource_version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rv_;
}

int FakeApiServer::open_watches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_watches_;
}

}  // namespace orca::controller::testing
