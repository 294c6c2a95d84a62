// orca-controller: the Kubernetes operator of orca.
//
//   orca-controller render -f CR.yaml [-o yaml|json]   print the objects it would apply
//   orca-controller run [flags]                        run the operator
//   orca-controller version
//
// Flags of `run` are listed by `orca-controller run --help` and in docs/controller.md.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "controller/api/yaml.h"
#include "controller/builders/render.h"
#include "controller/client/kube_config.h"
#include "controller/client/rest_client.h"
#include "controller/flags.h"
#include "controller/reconcile/informer.h"
#include "controller/reconcile/manager.h"
#include "engine/common/log.h"

namespace orca::controller {
namespace {

constexpr char kVersion[] = "0.1.0";
std::atomic<bool> g_signalled{false};

void OnSignal(int) { g_signalled = true; }

constexpr char kRunUsage[] = R"(usage: orca-controller run [flags]
  --kubeconfig PATH                 kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)
  --context NAME                    kubeconfig context (default: current-context)
  --namespace NS                    watch only this namespace (default: all namespaces)
  --workers N                       concurrent reconciles (default 2)
  --resync-period DURATION          re-reconcile every CR this often (default 10m)
  --request-timeout DURATION        timeout of one API request (default 30s)
  --watch-timeout DURATION          server-side timeout of one watch (default 5m)
  --leader-elect[=BOOL]             hold a Lease before reconciling (default true)
  --leader-election-namespace NS    namespace of the Lease (default: own namespace, else default)
  --leader-election-id NAME         name of the Lease (default orca-controller)
  --identity ID                     holder identity (default: $POD_NAME, else hostname)
  --lease-duration DURATION         (default 15s)
  --renew-deadline DURATION         (default 10s)
  --retry-period DURATION           (default 2s)
  --metrics-bind-address ADDR       /metrics listen address, "0" disables (default :8080)
  --health-probe-bind-address ADDR  /healthz and /readyz listen address, "0" disables (default :8081)
  --log-level LEVEL                 debug|info|warning|error (default info)
)";

std::string Hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "orca-controller";
  return buf;
}

int Render(int argc, char** argv) {
  auto flags = Flags::Parse(
      argc, argv, 2,
      {{"f", false}, {"filename", false}, {"o", false}, {"output", false}, {"help", true}});
  if (!flags.ok()) {
    std::cerr << "orca-controller render: " << flags.status().message() << "\n";
    return 2;
  }
  std::string file = flags->String("f", flags->String("filename", ""));
  std::string output = flags->String("o", flags->String("output", "yaml"));
  if (flags->Has("help") || file.empty() || (output != "yaml" && output != "json")) {
    std::cerr << "usage: orca-controller render -f CR.yaml|- [-o yaml|json]\n";
    return 2;
  }
  std::stringstream text;
  if (file == "-") {
    text << std::cin.rdbuf();
  } else {
    std::ifstream in(file);
    if (!in) {
      std::cerr << "orca-controller render: cannot read " << file << "\n";
      return 1;
    }
    text << in.rdbuf();
  }
  auto objects = RenderManifest(text.str(), file == "-" ? "<stdin>" : file);
  if (!objects.ok()) {
    std::cerr << "orca-controller render: " << objects.status().message() << "\n";
    return 1;
  }
  if (output == "json") {
    std::cout << Json(*objects).dump(2) << "\n";
  } else {
    std::cout << ToYamlDocuments(*objects);
  }
  return 0;
}

int Run(int argc, char** argv) {
  static const std::map<std::string, bool> kKnown = {{"kubeconfig", false},
                                                     {"context", false},
                                                     {"namespace", false},
                                                     {"workers", false},
                                                     {"resync-period", false},
                                                     {"request-timeout", false},
                                                     {"watch-timeout", false},
                                                     {"leader-elect", true},
                                                     {"leader-election-namespace", false},
                                                     {"leader-election-id", false},
                                                     {"identity", false},
                                                     {"lease-duration", false},
                                                     {"renew-deadline", false},
                                                     {"retry-period", false},
                                                     {"metrics-bind-address", false},
                                                     {"health-probe-bind-address", false},
                                                     {"log-level", false},
                                                     {"help", true}};
  auto flags = Flags::Parse(argc, argv, 2, kKnown);
  if (!flags.ok() || flags->Has("help")) {
    if (!flags.ok()) std::cerr << "orca-controller run: " << flags.status().message() << "\n";
    std::cerr << kRunUsage;
    return flags.ok() ? 0 : 2;
  }
  if (flags->Has("log-level"))
    setenv("ORCA_LOG_LEVEL", flags->String("log-level", "info").c_str(), 1);

  ManagerOptions opts;
  opts.watch_namespace = flags->String("namespace", "");
  absl::Duration request_timeout, watch_timeout;
  auto fail = [](const absl::Status& s) {
    std::cerr << "orca-controller run: " << s.message() << "\n" << kRunUsage;
    return 2;
  };
#define ORCA_FLAG(lhs, expr)              \
  do {                                    \
    auto v = (expr);                      \
    if (!v.ok()) return fail(v.status()); \
    lhs = *v;                             \
  } while (0)
  ORCA_FLAG(opts.workers, flags->Int("workers", 2));
  ORCA_FLAG(opts.resync_period, flags->Duration("resync-period", absl::Minutes(10)));
  ORCA_FLAG(request_timeout, flags->Duration("request-timeout", absl::Seconds(30)));
  ORCA_FLAG(watch_timeout, flags->Duration("watch-timeout", absl::Minutes(5)));
  ORCA_FLAG(opts.leader_elect, flags->Bool("leader-elect", true));
  LeaderElectionConfig& le = opts.leader_election;
  ORCA_FLAG(le.lease_duration, flags->Duration("lease-duration", absl::Seconds(15)));
  ORCA_FLAG(le.renew_deadline, flags->Duration("renew-deadline", absl::Seconds(10)));
  ORCA_FLAG(le.retry_period, flags->Duration("retry-period", absl::Seconds(2)));
#undef ORCA_FLAG
  if (opts.workers < 1 || le.renew_deadline >= le.lease_duration ||
      le.retry_period >= le.renew_deadline || opts.resync_period < absl::Seconds(1)) {
    return fail(absl::InvalidArgumentError(
        "need --workers >= 1, --retry-period < --renew-deadline < --lease-duration and "
        "--resync-period >= 1s"));
  }
  le.ns = flags->String("leader-election-namespace", InClusterNamespace("default"));
  le.name = flags->String("leader-election-id", "orca-controller");
  const char* pod_name = std::getenv("POD_NAME");
  le.identity = flags->String("identity", pod_name != nullptr && *pod_name ? pod_name : Hostname());
  opts.metrics_address = flags->String("metrics-bind-address", ":8080");
  opts.health_address = flags->String("health-probe-bind-address", ":8081");
  if (opts.metrics_address == "0") opts.metrics_address.clear();
  if (opts.health_address == "0") opts.health_address.clear();
  opts.watch_timeout_seconds = static_cast<int>(absl::ToInt64Seconds(watch_timeout));

  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  std::atomic<bool> stop{false};
  std::thread signal_watch([&stop] {
    while (!stop.load() && !g_signalled.load()) absl::SleepFor(absl::Milliseconds(100));
    stop = true;
  });
  auto finish = [&](int code) {
    stop = true;
    signal_watch.join();
    return code;
  };

  // A broken or missing configuration is logged once per attempt and retried: the
  // kubeconfig or service account may be mounted late.
  Backoff backoff(BackoffPolicy{absl::Seconds(1), absl::Seconds(30), 2.0, 0.2});
  std::unique_ptr<RestClient> client;
  while (!stop.load()) {
    absl::StatusOr<RestConfig> config = LoadDefaultConfig(flags->String("kubeconfig", ""));
    if (flags->Has("context")) {
      std::string path = flags->String("kubeconfig", "");
      const char* env = std::getenv("KUBECONFIG");
      const char* home = std::getenv("HOME");
      if (path.empty() && env != nullptr && *env != '\0')
        path = std::string(env).substr(0, std::string(env).find(':'));
      if (path.empty() && home != nullptr) path = absl::StrCat(home, "/.kube/config");
      config = LoadKubeconfig(path, flags->String("context", ""));
    }
    absl::Status s = config.status();
    if (config.ok()) {
      config->timeout = request_timeout;
      config->user_agent = absl::StrCat("orca-controller/", kVersion, " (", le.identity, ")");
      auto c = RestClient::Create(*config);
      s = c.status();
      if (c.ok()) client = std::move(*c);
    }
    if (client) break;
    absl::Duration delay = backoff.Next();
    ORCA_LOG(ERROR) << "cannot configure the API client: " << s.message() << "; retrying in "
                    << delay;
    SleepUnlessStopped(delay, &stop);
  }
  if (!client) return finish(0);
  ORCA_LOG(INFO) << "orca-controller " << kVersion << " talking to " << client->config().server
                 << (opts.watch_namespace.empty() ? " (all namespaces)"
                                                  : " (namespace " + opts.watch_namespace + ")");
  RestClient* raw = client.get();
  opts.cancel_watches = [raw] { raw->Shutdown(); };
  Manager manager(client.get(), opts);
  std::thread stopper([&] {
    while (!stop.load()) absl::SleepFor(absl::Milliseconds(100));
    manager.Stop();
    raw->Shutdown();
  });
  absl::Status s = manager.Run();
  stop = true;
  stopper.join();
  if (!s.ok()) {
    ORCA_LOG(ERROR) << "orca-controller stopped: " << s.message();
    return finish(1);
  }
  return finish(0);
}

}  // namespace
}  // namespace orca::controller

int main(int argc, char** argv) {
  std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "render") return orca::controller::Render(argc, argv);
  if (cmd == "run") return orca::controller::Run(argc, argv);
  if (cmd == "version" || cmd == "--version") {
    std::cout << "orca-controller " << orca::controller::kVersion << "\n";
    return 0;
  }
  std::cerr << "usage: orca-controller render -f CR.yaml [-o yaml|json]\n"
               "       orca-controller run [flags]   (run --help lists them)\n"
               "       orca-controller version\n";
  return cmd.empty() || cmd == "help" || cmd == "--help" ? 0 : 2;
}
