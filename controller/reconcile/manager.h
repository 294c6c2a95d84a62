// The operator process: leader election, informers on InferenceDeployments and
// their owned objects feeding a work queue, reconcile workers, a periodic resync,
// and the /healthz, /readyz and /metrics endpoints.
//
// Thread-safe: Run() blocks on one thread; Stop() and the accessors may be called
// from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "controller/client/kube_client.h"
#include "controller/reconcile/informer.h"
#include "controller/reconcile/leader_election.h"
#include "controller/reconcile/metrics.h"
#include "controller/reconcile/reconciler.h"
#include "controller/reconcile/work_queue.h"

namespace httplib {
class Server;
}

namespace orca::controller {

struct ManagerOptions {
  std::string watch_namespace;  // empty: all namespaces
  int workers = 2;
  absl::Duration resync_period = absl::Minutes(10);
  bool leader_elect = true;
  LeaderElectionConfig leader_election;
  // "host:port" ("0" port picks a free one, see bound ports); empty disables.
  std::string metrics_address = ":8080";
  std::string health_address = ":8081";
  int watch_timeout_seconds = 300;
  ReconcilerOptions reconciler;
  // Called by Stop() to abort blocked watches (RestClient::Shutdown).
  std::function<void()> cancel_watches;
};

class Manager {
 public:
  // `client` must outlive the manager.
  Manager(KubeClient* client, ManagerOptions options);
  ~Manager();

  // Runs until Stop() (returns OK) or until leadership is lost (returns Aborted;
  // the process should exit and restart, as controller-runtime does). Returns
  // InvalidArgument/Unavailable when an endpoint cannot bind.
  absl::Status Run();
  // Asks Run() to return; safe to call before, during or after Run.
  void Stop();

  // Returns true while this instance holds the lease (always, without election).
  bool IsLeader() const;
  // Returns true once the informers have listed (or while standing by as non-leader).
  bool Ready() const;
  int metrics_port() const { return metrics_port_.load(); }
  int health_port() const { return health_port_.load(); }
  const ControllerMetrics& metrics() const { return metrics_; }
  // Returns the total watch restarts and relists after 410 across informers.
  int watch_restarts() const;
  int relists() const;

 private:
  absl::Status StartEndpoints();
  void StartInformers();
  void WorkerLoop();
  void EnqueueOwner(const Json& object);
  void HousekeepingLoop();
  void StopEverything();

  KubeClient* const client_;
  const ManagerOptions options_;
  Reconciler reconciler_;
  WorkQueue queue_;
  ControllerMetrics metrics_;
  std::unique_ptr<LeaderElector> elector_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> leading_{false};
  std::atomic<bool> standby_{false};
  std::atomic<int> metrics_port_{0};
  std::atomic<int> health_port_{0};
  std::vector<std::unique_ptr<Informer>> informers_;
  std::vector<std::thread> threads_;
  std::vector<std::unique_ptr<httplib::Server>> servers_;
  std::vector<std::thread> server_threads_;
  mutable absl::Mutex mu_;
  std::set<std::string> known_keys_ ABSL_GUARDED_BY(mu_);
};

}  // namespace orca::controller
