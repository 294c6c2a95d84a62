// A tiny metrics exporter for the Prometheus e2e test: serves a Registry with known
// values on http://127.0.0.1:PORT/metrics until SIGTERM or SIGINT.
//
//   metrics_exporter_for_e2e [--port N] [--port-file PATH]
//
// --port 0 (the default) picks a free port; --port-file receives the port number
// (written atomically) once the socket listens. The values, which
// e2e/metrics/prometheus_scrape_test.sh checks with PromQL:
//   orca_e2e_requests_total{model_name="e2e-model",code="200"}   42
//   orca_e2e_requests_total{model_name="e2e-model",code="500"}   3
//   orca_e2e_temperature{model_name="e2e-model"}                 -12.25
//   orca_e2e_label_escaping{value="quote\" backslash\\ newline\n ✓"} 1
//   orca_e2e_latency_seconds{model_name="e2e-model"}  buckets 0.1, 0.5, 1 observing
//       0.05 0.1 0.3 0.7 2 -> le 0.1:2 0.5:3 1:4 +Inf:5, sum 3.15, count 5
//   orca_e2e_ticks_total{model_name="e2e-model"}  +1 every 100 ms
#include <httplib.h>
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "engine/metrics/metrics.h"

namespace {

using orca::metrics::BuildCounter;
using orca::metrics::BuildGauge;
using orca::metrics::BuildHistogram;
using orca::metrics::Counter;
using orca::metrics::Histogram;
using orca::metrics::Labels;
using orca::metrics::Registry;

struct Flags {
  int port = 0;
  std::string port_file;
};

bool ParseFlags(int argc, char** argv, Flags* flags) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--port" && i + 1 < argc) {
      flags->port = std::atoi(argv[++i]);
    } else if (arg == "--port-file" && i + 1 < argc) {
      flags->port_file = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--port N] [--port-file PATH]\n", argv[0]);
      return false;
    }
  }
  return true;
}

bool WritePortFile(const std::string& path, int port) {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) return false;
  std::fprintf(f, "%d\n", port);
  if (std::fclose(f) != 0) return false;
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

// Registers the documented families; returns the ticking counter.
Counter& PopulateRegistry(Registry& registry) {
  const Labels model = {{"model_name", "e2e-model"}};
  auto& requests = BuildCounter()
                       .Name("orca_e2e_requests_total")
                       .Help("Requests.")
                       .Labels(model)
                       .Register(registry);
  requests.Add({{"code", "200"}}).Increment(40);
  requests.Add({{"code", "200"}}).Increment(2);
  requests.Add({{"code", "500"}}).Increment(3);
  BuildGauge()
      .Name("orca_e2e_temperature")
      .Help("A gauge.")
      .Labels(model)
      .Register(registry)
      .Add({})
      .Set(-12.25);
  BuildGauge()
      .Name("orca_e2e_label_escaping")
      .Help("Help with \"quotes\", a back\\slash and a\nnewline.")
      .Register(registry)
      .Add({{"value", "quote\" backslash\\ newline\n \xe2\x9c\x93"}})
      .Set(1);
  Histogram& latency = BuildHistogram()
                           .Name("orca_e2e_latency_seconds")
                           .Help("A histogram.")
                           .Labels(model)
                           .Register(registry)
                           .Add({}, {0.1, 0.5, 1});
  for (double v : {0.05, 0.1, 0.3, 0.7, 2.0}) latency.Observe(v);
  return BuildCounter()
      .Name("orca_e2e_ticks_total")
      .Help("Ticks every 100 ms.")
      .Labels(model)
      .Register(registry)
      .Add({});
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  if (!ParseFlags(argc, argv, &flags)) return 2;

  // Block the stop signals before any thread starts; main waits for them below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  Registry registry;
  Counter& ticks = PopulateRegistry(registry);

  httplib::Server server;
  server.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(registry.Serialize(), orca::metrics::kTextContentType);
  });
  const int port = flags.port == 0
                       ? server.bind_to_any_port("127.0.0.1")
                       : (server.bind_to_port("127.0.0.1", flags.port) ? flags.port : -1);
  if (port <= 0) {
    std::fprintf(stderr, "metrics_exporter_for_e2e: cannot bind 127.0.0.1:%d\n", flags.port);
    return 1;
  }
  std::thread http([&] { server.listen_after_bind(); });
  std::atomic<bool> stop{false};
  std::thread ticker([&] {
    while (!stop.load()) {
      ticks.Increment();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  if (!flags.port_file.empty() && !WritePortFile(flags.port_file, port)) {
    std::fprintf(stderr, "metrics_exporter_for_e2e: cannot write %s: %s\n", flags.port_file.c_str(),
                 std::strerror(errno));
    server.stop();
    stop = true;
    http.join();
    ticker.join();
    return 1;
  }
  std::printf("metrics_exporter_for_e2e: serving http://127.0.0.1:%d/metrics\n", port);
  std::fflush(stdout);

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  server.stop();
  stop = true;
  http.join();
  ticker.join();
  return 0;
}
