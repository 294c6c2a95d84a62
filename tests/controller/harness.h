// A fake API server plus controller managers running in threads: the fixture of the
// reconcile tests and of the latency benchmark.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "controller/client/rest_client.h"
#include "controller/reconcile/manager.h"
#include "tests/controller/fake_api_server.h"

namespace orca::controller::testing {

inline constexpr char kCrPlural[] = "serving.orca.dev/v1alpha1/inferencedeployments";

class Harness {
 public:
  struct Instance {
    std::unique_ptr<RestClient> client;
    std::unique_ptr<Manager> manager;
    std::thread thread;
    absl::Status result;
  };

  explicit Harness(FakeApiServerOptions options = {}) {
    auto f = FakeApiServer::Start(std::move(options));
    if (f.ok()) fake_ = std::move(*f);
  }
  ~Harness() {
    for (auto& i : instances_) StopInstance(*i);
  }

  FakeApiServer& fake() { return *fake_; }
  bool ok() const { return fake_ != nullptr; }

  // Starts a controller instance talking to the fake; `tweak` adjusts its options.
  Instance& StartController(const std::string& identity, bool leader_elect = false,
                            const std::function<void(ManagerOptions&)>& tweak = nullptr) {
    auto inst = std::make_unique<Instance>();
    inst->client = NewClient(identity);
    ManagerOptions opts;
    opts.workers = 2;
    opts.leader_elect = leader_elect;
    opts.leader_election.identity = identity;
    opts.leader_election.lease_duration = absl::Seconds(2);
    opts.leader_election.renew_deadline = absl::Milliseconds(1500);
    opts.leader_election.retry_period = absl::Milliseconds(200);
    opts.metrics_address = "127.0.0.1:0";
    opts.health_address = "127.0.0.1:0";
    opts.watch_timeout_seconds = 60;
    opts.resync_period = absl::Seconds(30);
    opts.reconciler.progress_requeue = absl::Seconds(2);
    RestClient* raw = inst->client.get();
    opts.cancel_watches = [raw] { raw->Shutdown(); };
    if (tweak) tweak(opts);
    inst->manager = std::make_unique<Manager>(inst->client.get(), opts);
    Instance* p = inst.get();
    inst->thread = std::thread([p] { p->result = p->manager->Run(); });
    instances_.push_back(std::move(inst));
    return *instances_.back();
  }

  static void StopInstance(Instance& i) {
    if (!i.thread.joinable()) return;
    i.manager->Stop();
    i.thread.join();
  }

  std::unique_ptr<RestClient> NewClient(const std::string& identity) {
    RestConfig config;
    config.server = fake_->url();
    config.timeout = absl::Seconds(10);
    config.user_agent = "orca-controller (" + identity + ")";
    config.retry_backoff = {absl::Milliseconds(5), absl::Milliseconds(50), 2.0, 0.2};
    auto c = RestClient::Create(config);
    return c.ok() ? std::move(*c) : nullptr;
  }

  // Polls `done` until it holds or `timeout` passes; returns whether it held.
  static bool WaitFor(const std::function<bool()>& done,
                      absl::Duration timeout = absl::Seconds(30)) {
    absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      if (done()) return true;
      absl::SleepFor(absl::Milliseconds(5));
    }
    return done();
  }

  nlohmann::json Cr(const std::string& name, const std::string& ns = "default") {
    auto c = fake_->Get(kCrPlural, ns, name);
    return c.ok() ? *c : nlohmann::json();
  }

  static nlohmann::json Condition(const nlohmann::json& cr, const std::string& type) {
    if (!cr.is_object() || !cr.contains("status") || !cr["status"].contains("conditions")) {
      return nlohmann::json::object();
    }
    for (const auto& c : cr["status"]["conditions"]) {
      if (c["type"] == type) return c;
    }
    return nlohmann::json::object();
  }

  // True when the status reflects the current generation and Available is True
  // and the rollout is complete.
  bool Converged(const std::string& name, const std::string& ns = "default") {
    nlohmann::json cr = Cr(name, ns);
    if (cr.is_null() || !cr.contains("status")) return false;
    return cr["status"].value("observedGeneration", int64_t{-1}) ==
               cr["metadata"].value("generation", int64_t{0}) &&
           Condition(cr, "Available").value("status", "") == "True" &&
           Condition(cr, "Progressing").value("status", "") == "False";
  }

 private:
  std::unique_ptr<FakeApiServer> fake_;
  std::vector<std::unique_ptr<Instance>> instances_;
};

}  // namespace orca::controller::testing
