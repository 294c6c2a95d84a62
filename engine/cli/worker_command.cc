// `orca worker`: the ranks of one worker process in a serving group (DESIGN.md
// section 4). It hosts --gpus-per-pod ranks of pipeline stage --stage (tp ranks
// pod-index × gpus-per-pod onwards; or exactly --tp-rank), each dialing the scheduler at
// --scheduler (with the control-plane token of --control-token-file, when set), and
// serves /health, /ready and /metrics on --metrics-port. Its other
// settings (model, dtype, device, memory fraction, threads) come from engine.yaml
// (--config) and flags, as for every role (engine/config). $ORCA_POD_NAME, where set,
// names the ranks in the scheduler's logs.
//
// Lifecycle (docs/distributed.md, "Worker lifecycle"): /health and /ready follow
// WorkerHealth (engine/worker/worker_health.h): live while its ranks make progress
// (in a group, or waiting for one within worker.join_timeout_s; no plan executing longer
// than parallelism.rank_deadline_s), ready while every rank serves a group. A rank
// without a group for worker.join_timeout_s makes the process exit 1 naming the
// scheduler it dialed. On SIGTERM ranks in a group go on executing plans until the
// scheduler ends the group (it drains first) or server.shutdown_timeout_s plus 10 s
// passes; ranks without one stop at once; then the process exits 0. A second signal
// stops at once.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/cli/commands.h"
#include "engine/common/cpu_limit.h"
#include "engine/common/log.h"
#include "engine/common/status_macros.h"
#include "engine/config/config_loader.h"
#include "engine/metrics/metrics.h"
#include "engine/server/authenticator.h"
#include "engine/worker/worker.h"
#include "engine/worker/worker_health.h"
#include "httplib.h"

namespace orca {
namespace {

// SIGTERM / SIGINT received so far: the first drains, the second stops at once.
std::atomic<int> g_signals{0};
void OnSignal(int) { ++g_signals; }

// After SIGTERM a worker in a group waits for the scheduler to end it: the scheduler's
// drain (server.shutdown_timeout_s) plus this, which covers the scheduler's preStop wait
// (when a deletion signals the workers at once and the scheduler after its hook) and
// its closing. The workers' grace period must exceed both.
constexpr absl::Duration kDrainMargin = absl::Seconds(10);
constexpr absl::Duration kPollInterval = absl::Milliseconds(100);

std::vector<RankProgress> Progress(const std::vector<std::unique_ptr<WorkerRank>>& ranks) {
  std::vector<RankProgress> out;
  for (const auto& r : ranks) out.push_back(r->progress());
  return out;
}

std::string DefaultHost() {
  if (const char* ip = std::getenv("ORCA_POD_IP"); ip != nullptr && *ip) return ip;
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) == 0) return name;
  return "127.0.0.1";
}

// The worker's Prometheus metrics (the metrics library's data model), refreshed from its
// ranks at every scrape.
class WorkerMetrics {
 public:
  WorkerMetrics(const std::vector<std::unique_ptr<WorkerRank>>& ranks,
                const std::vector<int32_t>& tp_ranks, int32_t stage,
                const std::atomic<bool>* draining)
      : ranks_(ranks), draining_(draining) {
    draining_gauge_ = &metrics::BuildGauge()
                           .Name("orca_worker_draining")
                           .Help("1 once the worker got SIGTERM and finishes its group's plans.")
                           .Register(registry_)
                           .Add({});
    auto& ready = metrics::BuildGauge()
                      .Name("orca_worker_ready")
                      .Help("1 while the rank is initialised and serving plans.")
                      .Register(registry_);
    auto& iterations = metrics::BuildCounter()
                           .Name("orca_worker_iterations_total")
                           .Help("Plans executed by the rank.")
                           .Register(registry_);
    for (int32_t tp : tp_ranks) {
      const metrics::Labels labels = {{"stage", std::to_string(stage)},
                                      {"tp_rank", std::to_string(tp)}};
      ready_.push_back(&ready.Add(labels));
      iterations_.push_back(&iterations.Add(labels));
    }
  }

  std::string Scrape() {
    for (size_t i = 0; i < ranks_.size(); ++i) {
      ready_[i]->Set(ranks_[i]->ready() ? 1 : 0);
      const double done = static_cast<double>(ranks_[i]->iterations());
      if (done > iterations_[i]->Value()) iterations_[i]->Increment(done - iterations_[i]->Value());
    }
    draining_gauge_->Set(draining_->load() ? 1 : 0);
    return registry_.Serialize();
  }

 private:
  const std::vector<std::unique_ptr<WorkerRank>>& ranks_;
  const std::atomic<bool>* draining_;
  metrics::Registry registry_;
  metrics::Gauge* draining_gauge_ = nullptr;
  std::vector<metrics::Gauge*> ready_;
  std::vector<metrics::Counter*> iterations_;
};

absl::Status RunWorker(const EngineConfig& config) {
  const WorkerPlacement& place = config.worker;
  WorkerOptions base;
  base.scheduler = place.scheduler;
  base.model = config.model;
  base.stage = place.stage;
  base.host = place.host.empty() ? DefaultHost() : place.host;
  if (!config.parallel.control_token_file.empty()) {
    ORCA_ASSIGN_OR_RETURN(base.control_token, ReadSecretFile(config.parallel.control_token_file,
                                                             "parallelism.control_token_file"));
  }
  std::vector<int32_t> tp_ranks;
  if (place.tp_rank >= 0) {
    tp_ranks.push_back(place.tp_rank);
  } else {
    for (int32_t i = 0; i < config.parallel.gpus_per_pod; ++i) {
      tp_ranks.push_back(place.pod_index * config.parallel.gpus_per_pod + i);
    }
  }
  // The ranks share the process's CPUs (its cgroup limit unless --threads says otherwise).
  const int32_t cpus = config.device.threads > 0 ? config.device.threads : AvailableCpus();
  const int32_t threads_each = std::max<int32_t>(1, cpus / static_cast<int32_t>(tp_ranks.size()));
  const char* pod = std::getenv("ORCA_POD_NAME");
  const std::string who =
      pod != nullptr && *pod ? std::string(pod) : absl::StrCat(base.host, " pid ", getpid());
  std::vector<std::unique_ptr<WorkerRank>> ranks;
  for (size_t i = 0; i < tp_ranks.size(); ++i) {
    WorkerOptions o = base;
    o.tp_rank = tp_ranks[i];
    o.device = config.device;
    o.device.index = config.device.index + static_cast<int32_t>(i);
    o.device.threads = threads_each;
    o.name = absl::StrCat(who, " stage ", place.stage, " tp ", tp_ranks[i]);
    ranks.push_back(std::make_unique<WorkerRank>(o));
  }
  const int64_t metrics_port = place.metrics_port;
  const int32_t stage = place.stage;

  HealthLimits limits;
  limits.join_timeout = absl::Seconds(config.worker.join_timeout_s);
  limits.plan_deadline = absl::Seconds(config.parallel.rank_deadline_s);
  auto health = [&ranks, limits] {
    return EvaluateWorkerHealth(Progress(ranks), absl::Now(), limits);
  };
  std::atomic<bool> draining{false};

  WorkerMetrics worker_metrics(ranks, tp_ranks, base.stage, &draining);
  std::unique_ptr<httplib::Server> http;
  std::thread http_thread;
  if (metrics_port >= 0) {
    http = std::make_unique<httplib::Server>();
    // One request a connection: an idle keep-alive connection (a scraper's) would hold
    // the exit after SIGTERM for seconds.
    http->set_keep_alive_max_count(1);
    // Liveness: progress, not mere existence (a hung communicator answers 503).
    http->Get("/health", [&health](const httplib::Request&, httplib::Response& res) {
      const WorkerHealth h = health();
      res.status = h.live ? 200 : 503;
      res.set_content(h.live ? "ok\n" : absl::StrCat(h.reason, "\n"), "text/plain");
    });
    http->Get("/ready", [&health](const httplib::Request&, httplib::Response& res) {
      const WorkerHealth h = health();
      res.status = h.ready ? 200 : 503;
      res.set_content(h.ready ? "ready\n" : absl::StrCat("not ready: ", h.reason, "\n"),
                      "text/plain");
    });
    http->Get("/metrics", [&worker_metrics](const httplib::Request&, httplib::Response& res) {
      res.set_content(worker_metrics.Scrape(), metrics::kTextContentType);
    });
    if (!http->bind_to_port("0.0.0.0", static_cast<int>(metrics_port))) {
      return absl::UnavailableError(absl::StrCat("cannot listen on port ", metrics_port));
    }
    http_thread = std::thread([&http] { http->listen_after_bind(); });
  }

  std::vector<absl::Status> results(ranks.size());
  std::vector<std::thread> threads_run;
  std::atomic<size_t> running{ranks.size()};
  std::atomic<bool> failed{false};
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  for (size_t i = 0; i < ranks.size(); ++i) {
    threads_run.emplace_back([&, i] {
      results[i] = ranks[i]->Run();
      if (!results[i].ok()) failed = true;  // a configuration error: the process exits
      --running;
    });
  }
  std::cout << "orca: worker stage " << stage << " tp rank(s)";
  for (int32_t t : tp_ranks) std::cout << " " << t;
  std::cout << " dialing " << base.scheduler << std::endl;

  absl::Status exit_status;
  absl::Time drain_deadline = absl::InfiniteFuture();
  while (running > 0 && !failed) {
    std::this_thread::sleep_for(absl::ToChronoMilliseconds(kPollInterval));
    if (!draining) {
      const WorkerHealth h = health();
      if (h.join_timed_out) {
        std::string last;
        for (const auto& r : ranks) {
          if (last.empty()) last = r->last_error();
        }
        exit_status = absl::DeadlineExceededError(absl::StrCat(
            h.reason, ": could not join the scheduler at ", base.scheduler,
            last.empty() ? " (its control plane did not answer)" : absl::StrCat(" (", last, ")"),
            "; exiting so that the worker is restarted (worker.join_timeout_s, --join-timeout)"));
        break;
      }
    }
    const int signals = g_signals.load();
    if (signals >= 1 && !draining) {
      draining = true;
      const absl::Duration wait = absl::Seconds(config.server.shutdown_timeout_s) + kDrainMargin;
      drain_deadline = absl::Now() + wait;
      int in_group = 0;
      for (const auto& r : ranks) in_group += r->progress().in_group ? 1 : 0;
      ORCA_LOG(INFO) << "worker: draining: " << in_group << " of " << ranks.size()
                     << " rank(s) in a group execute plans until the scheduler ends it (at most "
                     << absl::FormatDuration(wait) << "); the others stop now";
      for (auto& r : ranks) r->Drain();
    }
    if (signals >= 2) {
      ORCA_LOG(WARNING) << "worker: a second signal; stopping now";
      break;
    }
    if (absl::Now() > drain_deadline) {
      ORCA_LOG(WARNING) << "worker: the scheduler did not end the group within "
                        << absl::FormatDuration(absl::Seconds(config.server.shutdown_timeout_s) +
                                                kDrainMargin)
                        << " of SIGTERM; stopping now";
      break;
    }
  }
  for (auto& r : ranks) r->Stop();
  for (auto& t : threads_run) t.join();
  if (http) {
    http->stop();
    http_thread.join();
  }
  if (draining) {
    ORCA_LOG(INFO) << "worker: drained; exiting";
  }
  ORCA_RETURN_IF_ERROR(exit_status);
  for (const absl::Status& s : results) ORCA_RETURN_IF_ERROR(s);
  return absl::OkStatus();
}

}  // namespace

int RunWorkerCommand(int argc, char** argv) {
  Flags flags;
  AddConfigFlags(Role::kWorker, flags);
  auto fail = [](int code, const absl::Status& s) {
    std::cerr << "orca worker: " << s.message() << "\n";
    return code;
  };
  if (auto s = flags.Parse(argc, argv, 0); !s.ok()) return fail(2, s);
  if (flags.GetBool("help")) {
    std::cout << "usage: orca worker --scheduler HOST:PORT --model DIR [flags]\n\n"
              << flags.Help() << SettingsHelp(Role::kWorker);
    return 0;
  }
  auto config = ResolveConfig(Role::kWorker, flags);
  if (!config.ok()) return fail(2, config.status());
  if (auto s = RunWorker(*config); !s.ok()) return fail(1, s);
  return 0;
}

}  // namespace orca
