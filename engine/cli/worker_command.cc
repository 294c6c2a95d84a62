// `orca worker`: the ranks of one worker process in a serving group (DESIGN.md
// section 4). It hosts --gpus-per-pod ranks of pipeline stage --stage (tp ranks
// pod-index × gpus-per-pod onwards; or exactly --tp-rank), each dialing the scheduler at
// --scheduler, and serves /health, /ready and /metrics on --metrics-port.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/cli/commands.h"
#include "engine/cli/engine_config.h"
#include "engine/cli/flags.h"
#include "engine/common/log.h"
#include "engine/common/status_macros.h"
#include "engine/metrics/metrics.h"
#include "engine/worker/worker.h"
#include "httplib.h"

namespace orca {
namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

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
                const std::vector<int32_t>& tp_ranks, int32_t stage)
      : ranks_(ranks) {
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
    return registry_.Serialize();
  }

 private:
  const std::vector<std::unique_ptr<WorkerRank>>& ranks_;
  metrics::Registry registry_;
  std::vector<metrics::Gauge*> ready_;
  std::vector<metrics::Counter*> iterations_;
};

absl::Status RunWorker(const Flags& flags) {
  WorkerOptions base;
  base.scheduler = flags.GetString("scheduler");
  if (base.scheduler.empty())
    return absl::InvalidArgumentError("--scheduler HOST:PORT is required");
  base.model_dir = flags.GetString("model");
  if (base.model_dir.empty()) return absl::InvalidArgumentError("--model DIR is required");
  base.device = flags.GetString("device");
  ORCA_ASSIGN_OR_RETURN(int64_t stage, flags.GetInt("stage"));
  ORCA_ASSIGN_OR_RETURN(int64_t threads, flags.GetInt("threads"));
  ORCA_ASSIGN_OR_RETURN(int64_t per_pod, flags.GetInt("gpus-per-pod"));
  ORCA_ASSIGN_OR_RETURN(int64_t pod_index, flags.GetInt("pod-index"));
  ORCA_ASSIGN_OR_RETURN(int64_t metrics_port, flags.GetInt("metrics-port"));
  if (stage < 0 || per_pod < 1 || per_pod > 64 || pod_index < 0 || threads < 0) {
    return absl::InvalidArgumentError(
        "--stage, --pod-index and --threads must be >= 0, --gpus-per-pod in [1, 64]");
  }
  base.stage = static_cast<int32_t>(stage);
  base.host = flags.GetString("host").empty() ? DefaultHost() : flags.GetString("host");
  std::vector<int32_t> tp_ranks;
  if (!flags.GetString("tp-rank").empty()) {
    ORCA_ASSIGN_OR_RETURN(int64_t tp, flags.GetInt("tp-rank"));
    if (tp < 0) return absl::InvalidArgumentError("--tp-rank must be >= 0");
    tp_ranks.push_back(static_cast<int32_t>(tp));
  } else {
    for (int64_t i = 0; i < per_pod; ++i)
      tp_ranks.push_back(static_cast<int32_t>(pod_index * per_pod + i));
  }
  const int32_t threads_each =
      threads > 0 ? std::max<int32_t>(1, static_cast<int32_t>(threads / tp_ranks.size())) : 0;
  std::vector<std::unique_ptr<WorkerRank>> ranks;
  for (size_t i = 0; i < tp_ranks.size(); ++i) {
    WorkerOptions o = base;
    o.tp_rank = tp_ranks[i];
    o.device_index = static_cast<int32_t>(i);
    o.num_threads = threads_each;
    o.name = absl::StrCat(base.host, " pid ", getpid(), " stage ", stage, " tp ", tp_ranks[i]);
    ranks.push_back(std::make_unique<WorkerRank>(o));
  }

  WorkerMetrics worker_metrics(ranks, tp_ranks, base.stage);
  std::unique_ptr<httplib::Server> http;
  std::thread http_thread;
  if (metrics_port >= 0) {
    http = std::make_unique<httplib::Server>();
    http->Get("/health", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("ok\n", "text/plain");
    });
    http->Get("/ready", [&ranks](const httplib::Request&, httplib::Response& res) {
      bool all = true;
      for (const auto& r : ranks) all = all && r->ready();
      res.status = all ? 200 : 503;
      res.set_content(all ? "ready\n" : "not ready\n", "text/plain");
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
  for (size_t i = 0; i < ranks.size(); ++i) {
    threads_run.emplace_back([&, i] {
      results[i] = ranks[i]->Run();
      if (!results[i].ok()) g_stop = true;  // a configuration error: the process exits
    });
  }
  std::cout << "orca: worker stage " << stage << " tp rank(s)";
  for (int32_t t : tp_ranks) std::cout << " " << t;
  std::cout << " dialing " << base.scheduler << std::endl;
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  for (auto& r : ranks) r->Stop();
  for (auto& t : threads_run) t.join();
  if (http) {
    http->stop();
    http_thread.join();
  }
  for (const absl::Status& s : results) ORCA_RETURN_IF_ERROR(s);
  return absl::OkStatus();
}

}  // namespace

int RunWorkerCommand(int argc, char** argv) {
  Flags flags;
  flags.Add("scheduler", "", "the scheduler's control-plane address HOST:PORT (required)")
      .Add("model", "", "Hugging Face checkpoint directory (required)")
      .Add("model-dir", "", "same as --model")
      .Add("config", "", "engine configuration file (orca-controller's engine.yaml) for defaults")
      .Add("stage", "0", "pipeline stage of this worker")
      .Add("tp-rank", "", "the one tensor-parallel rank to host (default: from --pod-index)")
      .Add("pod-index", "0", "this worker's index within its stage (StatefulSet ordinal)")
      .Add("gpus-per-pod", "1", "ranks this worker hosts: tp ranks pod-index*N .. +N-1")
      .Add("device", "cpu", "cpu or cuda")
      .Add("threads", "0", "CPU threads for all ranks together (0 = all cores)")
      .Add("host", "",
           "address peers reach this worker's data plane at (default: $ORCA_POD_IP or "
           "the hostname)")
      .Add("metrics-port", "9400", "port of /health, /ready and /metrics (-1 = off)")
      .Add("data-port", "0", "accepted for compatibility; Gloo listens on ports it picks")
      .Add("help", "", "show this help", true);
  auto fail = [](int code, const absl::Status& s) {
    std::cerr << "orca worker: " << s.message() << "\n";
    return code;
  };
  if (auto s = flags.Parse(argc, argv, 0); !s.ok()) return fail(2, s);
  if (flags.GetBool("help")) {
    std::cout << "usage: orca worker --scheduler HOST:PORT --model DIR [flags]\n\n" << flags.Help();
    return 0;
  }
  if (!flags.GetString("config").empty()) {
    if (auto s = ApplyEngineConfig(flags.GetString("config"), flags); !s.ok()) return fail(2, s);
  }
  if (!flags.GetString("model-dir").empty())
    flags.SetIfUnset("model", flags.GetString("model-dir"));
  if (auto s = RunWorker(flags); !s.ok()) return fail(1, s);
  return 0;
}

}  // namespace orca
