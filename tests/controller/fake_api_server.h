// An in-process fake Kubernetes API server for controller tests, served over HTTP
// on 127.0.0.1 so the real RestClient talks to it.
//
// Reproduces the semantics the controller relies on: a global resourceVersion,
// 409 on stale resourceVersion preconditions and on AlreadyExists, generation bumps
// on spec changes, status and scale subresources, server-side apply with per-manager
// field ownership (conflicts without force; lists are atomic), list with label
// selectors, watches with bookmarks and 410 Gone for compacted resourceVersions,
// ownerReference cascade on delete (synchronous), bearer-token auth, and injected
// faults (dropped watches, 5xx, conflicts, latency, admission rejections).
//
// Optionally simulates the workload controllers and kubelet: Deployments and
// StatefulSets get pods (named as Kubernetes names them) and status; pod readiness
// is decided by a test-provided predicate. Deployments replace pods when their
// template changes; StatefulSets only recreate missing pods (OnDelete).
//
// Thread-safe.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace httplib {
class Server;
class DataSink;
}  // namespace httplib

namespace orca::controller::testing {

using Json = nlohmann::json;

struct FakeApiServerOptions {
  size_t history_limit = 10000;  // watch events kept; older resourceVersions get 410
  absl::Duration bookmark_interval = absl::Milliseconds(500);
  std::string required_token;  // non-empty: every request needs this bearer token
  bool simulate_workloads = true;
  std::set<std::string> unserved;  // plurals answered with 404 (e.g. "scaledobjects")
  // Pods end gracefully, as with a kubelet: a deleted pod (directly, by cascade or by
  // its workload) gets metadata.deletionTimestamp = now + its
  // terminationGracePeriodSeconds (default 30) and stays until FinishTermination.
  bool graceful_pod_deletion = false;
};

struct RequestRecord {
  std::string method;
  std::string path;
  std::string user_agent;
  int status = 0;
};

class FakeApiServer {
 public:
  static absl::StatusOr<std::unique_ptr<FakeApiServer>> Start(FakeApiServerOptions options = {});
  ~FakeApiServer();

  // Returns "http://127.0.0.1:<port>".
  std::string url() const;

  // In-process access, bypassing HTTP, faults and admission. `plural` is the
  // resource path prefix: "pods", "apps/v1/deployments",
  // "serving.orca.dev/v1alpha1/inferencedeployments" (core kinds: bare plural).
  absl::StatusOr<Json> Get(const std::string& plural, const std::string& ns,
                           const std::string& name);
  std::vector<Json> List(const std::string& plural, const std::string& ns = "");
  // Creates or replaces an object as a user would (status kept as given).
  absl::StatusOr<Json> Upsert(const std::string& plural, Json object);
  // Replaces the status of an object (as a kubelet or controller would).
  absl::StatusOr<Json> SetStatus(const std::string& plural, const std::string& ns,
                                 const std::string& name, Json status);
  // Deletes with cascade.
  absl::Status Delete(const std::string& plural, const std::string& ns, const std::string& name);
  // Removes terminating pod `name` (its containers exited); its workload may replace it.
  absl::Status FinishTermination(const std::string& ns, const std::string& name);
  // Sets spec.replicas of an InferenceDeployment through its scale subresource logic.
  absl::Status Scale(const std::string& ns, const std::string& name, int replicas);

  // Faults.
  void DropWatches();  // ends every open watch stream now
  void Compact();      // forgets history: old resourceVersions get 410
  void FailNextRequests(int n, int http_status = 500);  // non-watch requests
  void ConflictNextWrites(int n);                       // PUT/PATCH/POST answer 409
  void SetLatency(absl::Duration latency);              // added to every request
  // Admission for InferenceDeployment writes; an error becomes 422 Invalid.
  void SetValidator(std::function<absl::Status(const Json&)> validator);
  // Pod readiness of simulated pods (default: every pod is ready).
  void SetPodReadiness(std::function<bool(const Json& pod)> ready);
  // Re-runs the workload simulation (after changing readiness).
  void Resimulate();

  // Calls `observer` (under the store lock: keep it short) after every stored write.
  void SetWriteObserver(
      std::function<void(const std::string& plural, const Json& object)> observer);

  std::vector<RequestRecord> Requests() const;
  void ClearRequests();
  int64_t resource_version() const;
  int open_watches() const;

 private:
  struct Key {
    std::string plural;
    std::string ns;
    std::string name;
    bool operator<(const Key& o) const {
      return std::tie(plural, ns, name) < std::tie(o.plural, o.ns, o.name);
    }
  };
  struct Event {
    int64_t rv;
    std::string plural;
    std::string ns;
    std::string type;
    Json object;
  };
  struct ResourceInfo {
    std::string api_version;
    std::string kind;
    bool status_subresource;
  };
  struct WatchState;

  explicit FakeApiServer(FakeApiServerOptions options);
  void Handle(const std::string& method, const void* req, void* res);

  // Store operations; require mu_ held.
  const ResourceInfo* Info(const std::string& plural) const;
  Json Stored(const Key& k) const;
  void Put(const Key& k, Json object, const std::string& type);
  void Remove(const Key& k);
  // Deletes `k` as the API server does on a delete request: pods with
  // graceful_pod_deletion become terminating, everything else is removed.
  void RequestDelete(const Key& k);
  void Cascade(const std::string& uid);
  // Deletes `k` when it has ownerReferences none of which exists any more, as the
  // garbage collector does for dependents created after their owner was deleted.
  void CollectIfOrphan(const Key& k);
  absl::StatusOr<Json> CreateLocked(const std::string& plural, const std::string& ns, Json obj,
                                    const std::string& manager);
  absl::StatusOr<Json> UpdateLocked(const std::string& plural, const std::string& ns,
                                    const std::string& name, Json obj, bool status_only,
                                    const std::string& manager);
  absl::StatusOr<Json> ApplyLocked(const std::string& plural, const std::string& ns,
                                   const std::string& name, const Json& config,
                                   const std::string& manager, bool force);
  absl::Status Admit(const std::string& plural, const Json& obj);
  void TrackOwnership(const Key& k, const Json& before, const Json& after,
                      const std::string& manager);
  void SimulateLocked();  // every workload
  // Simulates only the workloads a write of `object` (of `plural`) can affect.
  void SimulateAfterWrite(const std::string& plural, const Json& object);
  void SimulateOne(const Key& workload);
  std::vector<Key> PodsIn(const std::string& ns) const;
  bool SimulateDeployment(const Key& k);
  bool SimulateStatefulSet(const Key& k);
  Json NewPod(const Json& owner, const std::string& name, const Json& template_spec,
              const std::string& owner_kind, int index);
  void UpdateWorkloadStatus(const Key& k, const std::string& kind);
  bool StreamWatch(WatchState& w, httplib::DataSink& sink);

  const FakeApiServerOptions options_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<Key, Json> objects_;
  std::set<std::string> uids_;  // of stored objects
  // owners_[key][manager] = leaf paths the manager owns.
  std::map<Key, std::map<std::string, std::map<std::string, Json>>> owners_;
  std::vector<Event> history_;
  int64_t rv_ = 100;
  int64_t compacted_rv_ = 0;
  int64_t uid_counter_ = 0;
  int drop_generation_ = 0;
  bool stopping_ = false;
  int fail_next_ = 0;
  int fail_status_ = 500;
  int conflict_next_ = 0;
  absl::Duration latency_ = absl::ZeroDuration();
  int open_watches_ = 0;
  bool simulating_ = false;
  std::function<absl::Status(const Json&)> validator_;
  std::function<bool(const Json&)> pod_ready_;
  std::function<void(const std::string&, const Json&)> write_observer_;
  std::vector<RequestRecord> requests_;
};

}  // namespace orca::controller::testing
