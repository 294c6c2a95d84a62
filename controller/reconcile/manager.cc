#include "controller/reconcile/manager.h"

#include <httplib.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "controller/builders/layout.h"
#include "controller/client/kube_errors.h"
#include "engine/common/log.h"
#include "engine/common/status_macros.h"

namespace orca::controller {
namespace {

// Splits "host:port" (":8080" binds every interface).
absl::Status ParseAddress(const std::string& address, std::string* host, int* port) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), port) ||
      *port < 0 || *port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("bind address \"", address, "\" is not host:port"));
  }
  *host = address.substr(0, colon);
  if (host->empty()) *host = "0.0.0.0";
  return absl::OkStatus();
}

}  // namespace

Manager::Manager(KubeClient* client, ManagerOptions options)
    : client_(client), options_(std::move(options)), reconciler_(client, options_.reconciler) {}

Manager::~Manager() { StopEverything(); }

bool Manager::IsLeader() const { return leading_.load(); }

bool Manager::Ready() const {
  if (standby_.load()) return true;
  if (!leading_.load()) return false;
  for (const auto& inf : informers_) {
    if (!inf->HasSynced()) return false;
  }
  return true;
}

int Manager::watch_restarts() const {
  int n = 0;
  for (const auto& inf : informers_) n += inf->restarts();
  return n;
}

int Manager::relists() const {
  int n = 0;
  for (const auto& inf : informers_) n += inf->relists();
  return n;
}

absl::Status Manager::StartEndpoints() {
  struct Endpoint {
    std::string address;
    bool metrics;
    bool health;
  };
  std::vector<Endpoint> endpoints;
  if (!options_.metrics_address.empty() && options_.metrics_address == options_.health_address) {
    endpoints.push_back({options_.metrics_address, true, true});
  } else {
    if (!options_.metrics_address.empty())
      endpoints.push_back({options_.metrics_address, true, false});
    if (!options_.health_address.empty())
      endpoints.push_back({options_.health_address, false, true});
  }
  for (const Endpoint& e : endpoints) {
    std::string host;
    int port = 0;
    ORCA_RETURN_IF_ERROR(ParseAddress(e.address, &host, &port));
    auto server = std::make_unique<httplib::Server>();
    server->set_tcp_nodelay(true);
    if (e.health) {
      server->Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
        res.set_content("ok\n", "text/plain");
      });
      server->Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
        bool ready = Ready();
        res.status = ready ? 200 : 503;
        res.set_content(ready ? "ok\n" : "informers not synced\n", "text/plain");
      });
    }
    if (e.metrics) {
      server->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
        res.set_content(metrics_.Render(), "text/plain; version=0.0.4");
      });
    }
    int bound =
        port == 0 ? server->bind_to_any_port(host) : (server->bind_to_port(host, port) ? port : -1);
    if (bound <= 0) {
      return absl::UnavailableError(absl::StrCat("cannot listen on ", e.address));
    }
    if (e.metrics) metrics_port_ = bound;
    if (e.health) health_port_ = bound;
    httplib::Server* raw = server.get();
    servers_.push_back(std::move(server));
    server_threads_.emplace_back([raw] { raw->listen_after_bind(); });
  }
  return absl::OkStatus();
}

void Manager::EnqueueOwner(const Json& object) {
  if (!object.is_object() || !object.contains("metadata")) return;
  const Json& meta = object["metadata"];
  std::string ns = meta.value("namespace", "");
  if (!meta.contains("labels") || !meta["labels"].contains(kLabelDeployment)) return;
  queue_.Add(absl::StrCat(ns, "/", meta["labels"][kLabelDeployment].get<std::string>()));
}

void Manager::StartInformers() {
  InformerOptions cr_opts;
  cr_opts.ns = options_.watch_namespace;
  cr_opts.watch_timeout_seconds = options_.watch_timeout_seconds;
  informers_.push_back(std::make_unique<Informer>(
      client_, resources::kInferenceDeployment, cr_opts, [this](const WatchEvent& ev) {
        const Json& meta = ev.object["metadata"];
        std::string key = absl::StrCat(meta.value("namespace", ""), "/", meta.value("name", ""));
        {
          absl::MutexLock lock(&mu_);
          if (ev.type == WatchEventType::kDeleted) {
            known_keys_.erase(key);
          } else {
            known_keys_.insert(key);
          }
        }
        queue_.Add(key);
      }));
  InformerOptions owned_opts = cr_opts;
  owned_opts.label_selector = kLabelDeployment;  // "has the label"
  for (const ResourceType* type :
       {&resources::kDeployment, &resources::kStatefulSet, &resources::kService,
        &resources::kConfigMap, &resources::kPod}) {
    informers_.push_back(std::make_unique<Informer>(
        client_, *type, owned_opts, [this](const WatchEvent& ev) { EnqueueOwner(ev.object); }));
  }
  for (auto& inf : informers_) {
    Informer* raw = inf.get();
    threads_.emplace_back([this, raw] { raw->Run(&stop_); });
  }
}

void Manager::WorkerLoop() {
  while (std::optional<std::string> key = queue_.Get()) {
    size_t slash = key->find('/');
    std::string ns = key->substr(0, slash);
    std::string name = slash == std::string::npos ? "" : key->substr(slash + 1);
    absl::Time start = absl::Now();
    absl::StatusOr<ReconcileResult> r = reconciler_.Reconcile(ns, name);
    double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    if (!r.ok()) {
      metrics_.ObserveReconcile("error", seconds);
      absl::Duration delay = queue_.AddRateLimited(*key);
      if (IsConflict(r.status())) {
        ORCA_LOG(INFO) << "reconcile " << *key << ": " << r.status().message() << "; retrying in "
                       << delay;
      } else {
        ORCA_LOG(WARNING) << "reconcile " << *key << " failed: " << r.status().message()
                          << "; retrying in " << delay;
      }
    } else {
      queue_.Forget(*key);
      if (r->requeue_after > absl::ZeroDuration()) {
        metrics_.ObserveReconcile("requeue", seconds);
        queue_.AddAfter(*key, r->requeue_after);
      } else {
        metrics_.ObserveReconcile("success", seconds);
      }
    }
    queue_.Done(*key);
  }
}

void Manager::HousekeepingLoop() {
  absl::Time next_resync = absl::Now() + options_.resync_period;
  while (!stop_.load()) {
    SleepUnlessStopped(absl::Milliseconds(500), &stop_);
    metrics_.SetQueueDepth(static_cast<int64_t>(queue_.Len()));
    for (const auto& inf : informers_)
      metrics_.SetWatchRestarts(inf->type().plural, inf->restarts());
    if (absl::Now() >= next_resync) {
      next_resync = absl::Now() + options_.resync_period;
      absl::MutexLock lock(&mu_);
      for (const std::string& key : known_keys_) queue_.Add(key);
    }
  }
}

absl::Status Manager::Run() {
  ORCA_RETURN_IF_ERROR(StartEndpoints());
  const LeaderElectionConfig& le = options_.leader_election;
  if (options_.leader_elect) {
    elector_ = std::make_unique<LeaderElector>(client_, le);
    standby_ = true;
    std::string last_message;
    while (!stop_.load()) {
      absl::Status s = elector_->TryAcquireOrRenew();
      if (s.ok()) break;
      if (s.message() != last_message) {
        ORCA_LOG(INFO) << "waiting for leadership (" << le.identity << "): " << s.message();
        last_message = std::string(s.message());
      }
      SleepUnlessStopped(le.retry_period, &stop_);
    }
    if (stop_.load()) {
      standby_ = false;
      StopEverything();
      return absl::OkStatus();
    }
    ORCA_LOG(INFO) << "acquired lease " << le.ns << "/" << le.name << " as " << le.identity;
  }
  leading_ = true;
  standby_ = false;
  metrics_.SetLeader(true);
  StartInformers();
  for (int i = 0; i < std::max(1, options_.workers); ++i) {
    threads_.emplace_back([this] { WorkerLoop(); });
  }
  threads_.emplace_back([this] { HousekeepingLoop(); });

  absl::Status result = absl::OkStatus();
  absl::Time last_renew = absl::Now();
  while (!stop_.load()) {
    SleepUnlessStopped(options_.leader_elect ? le.retry_period : absl::Milliseconds(200), &stop_);
    if (!options_.leader_elect || stop_.load()) continue;
    absl::Status s = elector_->TryAcquireOrRenew();
    if (s.ok()) {
      last_renew = absl::Now();
    } else if (absl::Now() - last_renew > le.renew_deadline) {
      ORCA_LOG(ERROR) << "lost leadership of lease " << le.ns << "/" << le.name << ": "
                      << s.message() << "; stopping";
      result = absl::AbortedError("leadership lost");
      break;
    } else {
      ORCA_LOG(WARNING) << "lease renewal failed: " << s.message();
    }
  }
  leading_ = false;
  metrics_.SetLeader(false);
  StopEverything();
  if (result.ok() && elector_) elector_->Release();
  return result;
}

void Manager::Stop() { stop_ = true; }

void Manager::StopEverything() {
  stop_ = true;
  queue_.ShutDown();
  if (options_.cancel_watches) options_.cancel_watches();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
  for (auto& s : servers_) s->stop();
  for (std::thread& t : server_threads_) {
    if (t.joinable()) t.join();
  }
  server_threads_.clear();
  servers_.clear();
}

}  // namespace orca::controller
