// `orca bench serve`: flags -> trace -> one run or a sweep -> JSON (+ Figure 10 PNG).
#include <httplib.h>

#include <cmath>
#include <iostream>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "bench/loadgen/internal/subcommands.h"
#include "bench/loadgen/load_runner.h"
#include "bench/loadgen/plot.h"
#include "bench/loadgen/report.h"
#include "engine/common/file_util.h"
#include "engine/common/status_macros.h"
#include "engine/config/flags.h"

namespace orca::bench {
namespace {

using nlohmann::json;

void AddServeFlags(Flags& f) {
  f.Add("url", "http://127.0.0.1:8000",
        "server base URL (scheme://host:port); several, comma-separated, are measured "
        "interleaved point by point")
      .Add("endpoint", "/v1/completions", "completions path")
      .Add("model", "", "model name to send (default: the first of GET /v1/models)")
      .Add("api-key-file", "", "file holding a Bearer API key")
      .Add("label", "", "curve name(s) in results and plots, one per URL (default: the model name)")
      .Add("trace", "paper",
           "paper (Poisson, U[input-min,input-max] in, U[output-min,output-max] out), "
           "fixed (--input-len/--output-len), or file (--trace-file)")
      .Add("trace-file", "",
           "JSONL trace: {\"arrival_s\", \"input_len\" | \"prompt\", \"output_len\"}")
      .Add("write-trace", "", "also write the (first point's) trace as JSONL here")
      .Add("num-requests", "200", "requests per run (per sweep point)")
      .Add("duration", "0", "if > 0: requests per run = rate * duration (open loop)")
      .Add("rate", "1", "Poisson arrival rate, requests/s (0 = all at once)")
      .Add("burstiness", "1",
           "shape of the gamma-distributed arrival gaps: 1 = Poisson, < 1 burstier, > 1 "
           "steadier (mean rate unchanged)")
      .Add("sweep", "", "comma-separated rates: one run each, plotted as the paper's Figure 10")
      .Add("concurrency", "0", "closed loop with this many clients instead of arrivals")
      .Add("sweep-concurrency", "", "comma-separated client counts: a closed-loop sweep")
      .Add("input-min", "32", "paper trace: shortest input")
      .Add("input-max", "512", "paper trace: longest input")
      .Add("output-min", "1", "paper trace: shortest output")
      .Add("output-max", "128", "paper trace: longest output")
      .Add("input-len", "128", "fixed trace: input tokens")
      .Add("output-len", "64", "fixed trace: output tokens")
      .Add("token-id-min", "1", "smallest prompt token id")
      .Add("token-id-max", "500", "largest prompt token id")
      .Add("seed", "1", "trace and sampling seed")
      .Add("temperature", "0", "sampling temperature sent with every request")
      .Add("extra-body", "", "JSON object merged into every request body")
      .Add("nest-prompt", "", "send prompts as [[ids]] (a batch of one) instead of [ids]", true)
      .Add("timeout", "600", "per-request timeout, seconds")
      .Add("max-duration", "0", "per-run bound in seconds: later requests are not sent (0 = none)")
      .Add("cooldown", "1", "seconds between sweep points")
      .Add("slo-ttft-ms", "0", "goodput SLO on time to first token (0 = none)")
      .Add("slo-tpot-ms", "0", "goodput SLO on time per output token")
      .Add("slo-e2e-ms", "0", "goodput SLO on end-to-end latency")
      .Add("slo-normalized-ms", "0", "goodput SLO on normalized latency (ms/token)")
      .Add("out", "", "result JSON file (default: stdout)")
      .Add("plot", "", "Figure 10 PNG (default with --sweep and --out: OUT with .png)")
      .Add("title", "", "plot title")
      .Add("save-requests", "", "include every request's record in the JSON", true)
      .Add("require-success", "", "exit 3 when any request failed", true)
      .Add("progress-interval", "2", "seconds between progress lines (0 = none)")
      .Add("help", "", "show this help", true);
}

// One server under test. Several targets are measured interleaved, point by point, so
// that a machine whose load changes over time treats them alike.
struct Target {
  std::string url, label, model;
  json server = json::object();  // its /v1/models and /version
};

struct ServeSetup {
  LoadOptions load;  // load.client.base_url/model are set per target
  TraceOptions trace;
  std::vector<Target> targets;
  std::string trace_kind, command;
  Slo slo;
  int64_t num_requests = 0;
  double duration = 0, cooldown = 1;
  std::vector<double> rates;        // open-loop points
  std::vector<double> concurrency;  // closed-loop points
};

// Asks the target for its models (and, for orca, its version), choosing its model
// name when none was given; fails when it is unreachable.
absl::Status ProbeServer(Target& t, const std::string& api_key) {
  httplib::Client cli(t.url);
  cli.set_connection_timeout(std::chrono::seconds(10));
  cli.set_read_timeout(std::chrono::seconds(30));
  httplib::Headers h;
  if (!api_key.empty()) h.emplace("Authorization", "Bearer " + api_key);
  auto res = cli.Get("/v1/models", h);
  if (!res) {
    return absl::UnavailableError(
        absl::StrCat("cannot reach ", t.url, " (", httplib::to_string(res.error()), " error)"));
  }
  json models = json::parse(res->body, nullptr, false);
  if (res->status == 200 && models.is_object() && models.contains("data") &&
      models["data"].is_array() && !models["data"].empty()) {
    t.server["models"] = models["data"];
    if (t.model.empty()) t.model = models["data"][0].value("id", "");
  }
  if (auto v = cli.Get("/version", h); v && v->status == 200) {
    json vj = json::parse(v->body, nullptr, false);
    t.server["version"] = vj.is_discarded() ? json(v->body) : vj;
  }
  if (t.label.empty()) t.label = t.model.empty() ? t.url : t.model;
  return absl::OkStatus();
}

absl::StatusOr<ServeSetup> SetupFromFlags(const Flags& f) {
  ServeSetup s;
  ClientOptions& c = s.load.client;
  std::vector<std::string> urls = absl::StrSplit(f.GetString("url"), ',', absl::SkipWhitespace());
  std::vector<std::string> labels = absl::StrSplit(f.GetString("label"), ',', absl::SkipEmpty());
  if (urls.empty()) return absl::InvalidArgumentError("--url is required");
  if (!labels.empty() && labels.size() != urls.size()) {
    return absl::InvalidArgumentError("--label must name every --url (comma-separated)");
  }
  for (size_t i = 0; i < urls.size(); ++i) {
    Target t;
    t.url = urls[i];
    while (!t.url.empty() && t.url.back() == '/') t.url.pop_back();
    t.label = labels.empty() ? "" : labels[i];
    t.model = f.GetString("model");
    s.targets.push_back(std::move(t));
  }
  c.endpoint = f.GetString("endpoint");
  if (!f.GetString("api-key-file").empty()) {
    ORCA_ASSIGN_OR_RETURN(std::string key, ReadFile(f.GetString("api-key-file")));
    c.api_key = std::string(absl::StripAsciiWhitespace(key));
  }
  ORCA_ASSIGN_OR_RETURN(c.temperature, f.GetDouble("temperature"));
  c.nest_prompt = f.GetBool("nest-prompt");
  ORCA_ASSIGN_OR_RETURN(c.request_timeout_s, f.GetDouble("timeout"));
  if (!f.GetString("extra-body").empty()) {
    c.extra_body = json::parse(f.GetString("extra-body"), nullptr, false);
    if (!c.extra_body.is_object())
      return absl::InvalidArgumentError("--extra-body must be a JSON object");
  }
  ORCA_ASSIGN_OR_RETURN(s.load.max_duration_s, f.GetDouble("max-duration"));
  ORCA_ASSIGN_OR_RETURN(s.load.progress_interval_s, f.GetDouble("progress-interval"));
  ORCA_ASSIGN_OR_RETURN(s.cooldown, f.GetDouble("cooldown"));
  ORCA_ASSIGN_OR_RETURN(s.slo.ttft_ms, f.GetDouble("slo-ttft-ms"));
  ORCA_ASSIGN_OR_RETURN(s.slo.tpot_ms, f.GetDouble("slo-tpot-ms"));
  ORCA_ASSIGN_OR_RETURN(s.slo.e2e_ms, f.GetDouble("slo-e2e-ms"));
  ORCA_ASSIGN_OR_RETURN(s.slo.normalized_ms, f.GetDouble("slo-normalized-ms"));

  TraceOptions& t = s.trace;
  s.trace_kind = f.GetString("trace");
  auto i32 = [&](const char* name) -> absl::StatusOr<int32_t> {
    ORCA_ASSIGN_OR_RETURN(int64_t v, f.GetInt(name));
    if (v < 0 || v > (int64_t{1} << 30))
      return absl::InvalidArgumentError(absl::StrCat("--", name, " out of range"));
    return static_cast<int32_t>(v);
  };
  if (s.trace_kind == "paper") {
    ORCA_ASSIGN_OR_RETURN(t.input_min, i32("input-min"));
    ORCA_ASSIGN_OR_RETURN(t.input_max, i32("input-max"));
    ORCA_ASSIGN_OR_RETURN(t.output_min, i32("output-min"));
    ORCA_ASSIGN_OR_RETURN(t.output_max, i32("output-max"));
  } else if (s.trace_kind == "fixed") {
    ORCA_ASSIGN_OR_RETURN(t.input_min, i32("input-len"));
    ORCA_ASSIGN_OR_RETURN(t.output_min, i32("output-len"));
    t.input_max = t.input_min;
    t.output_max = t.output_min;
  } else if (s.trace_kind == "file") {
    if (f.GetString("trace-file").empty())
      return absl::InvalidArgumentError("--trace file needs --trace-file");
  } else {
    return absl::InvalidArgumentError("--trace must be paper, fixed or file");
  }
  ORCA_ASSIGN_OR_RETURN(t.burstiness, f.GetDouble("burstiness"));
  if (!(t.burstiness > 0) || std::isinf(t.burstiness))
    return absl::InvalidArgumentError("--burstiness must be a positive number");
  ORCA_ASSIGN_OR_RETURN(t.token_id_min, i32("token-id-min"));
  ORCA_ASSIGN_OR_RETURN(t.token_id_max, i32("token-id-max"));
  ORCA_ASSIGN_OR_RETURN(int64_t seed, f.GetInt("seed"));
  t.seed = static_cast<uint64_t>(seed);
  c.seed = t.seed;
  ORCA_ASSIGN_OR_RETURN(s.num_requests, f.GetInt("num-requests"));
  ORCA_ASSIGN_OR_RETURN(s.duration, f.GetDouble("duration"));
  if (s.num_requests < 1) return absl::InvalidArgumentError("--num-requests must be >= 1");

  ORCA_ASSIGN_OR_RETURN(double rate, f.GetDouble("rate"));
  ORCA_ASSIGN_OR_RETURN(int64_t conc, f.GetInt("concurrency"));
  if (!f.GetString("sweep").empty()) {
    ORCA_ASSIGN_OR_RETURN(s.rates, ParseNumberList(f.GetString("sweep"), "sweep"));
  } else if (!f.GetString("sweep-concurrency").empty()) {
    ORCA_ASSIGN_OR_RETURN(s.concurrency,
                          ParseNumberList(f.GetString("sweep-concurrency"), "sweep-concurrency"));
  } else if (conc > 0) {
    s.concurrency = {static_cast<double>(conc)};
  } else {
    s.rates = {rate};
  }
  for (double c : s.concurrency) {
    if (c < 1 || c != std::floor(c))
      return absl::InvalidArgumentError("client counts must be integers >= 1");
  }
  for (double r : s.rates) {
    if (r < 0) return absl::InvalidArgumentError("rates must be >= 0");
  }
  return s;
}

// Returns the trace of sweep point `k`: the first n requests of the rate-1 base trace
// with arrivals scaled to `rate` (a file trace keeps its times unless a rate is given)
// and, for generated traces, prompts of the same lengths drawn anew for every point.
std::vector<TraceRequest> PointTrace(const ServeSetup& s, const std::vector<TraceRequest>& base,
                                     size_t k, double rate, bool closed) {
  int64_t n = s.num_requests;
  if (!closed && s.duration > 0 && rate > 0)
    n = std::max<int64_t>(1, std::llround(rate * s.duration));
  n = std::min<int64_t>(n, static_cast<int64_t>(base.size()));
  std::vector<TraceRequest> trace(base.begin(), base.begin() + n);
  if (s.trace_kind != "file" && k > 0) trace = RedrawPrompts(std::move(trace), s.trace, k);
  if (closed) return trace;
  if (rate <= 0) return ScaleArrivals(std::move(trace), 0.0);
  const double base_rate = s.trace_kind == "file" ? MeanRate(base) : 1.0;
  return base_rate > 0 ? ScaleArrivals(std::move(trace), base_rate / rate) : trace;
}

json ConfigJson(const ServeSetup& s, const Target& target) {
  const ClientOptions& c = s.load.client;
  json trace = {{"kind", s.trace_kind},
                {"num_requests", s.num_requests},
                {"duration_s", s.duration},
                {"seed", s.trace.seed},
                {"token_id_range", {s.trace.token_id_min, s.trace.token_id_max}}};
  if (s.trace_kind != "file") {
    trace["input_len_range"] = {s.trace.input_min, s.trace.input_max};
    trace["output_len_range"] = {s.trace.output_min, s.trace.output_max};
    trace["burstiness"] = s.trace.burstiness;
  }
  return json{{"command", s.command},
              {"url", target.url},
              {"endpoint", c.endpoint},
              {"model", target.model},
              {"trace", trace},
              {"temperature", c.temperature},
              {"extra_body", c.extra_body},
              {"nest_prompt", c.nest_prompt},
              {"timeout_s", c.request_timeout_s},
              {"max_duration_s", s.load.max_duration_s},
              {"slo",
               {{"ttft_ms", s.slo.ttft_ms},
                {"tpot_ms", s.slo.tpot_ms},
                {"e2e_ms", s.slo.e2e_ms},
                {"normalized_ms", s.slo.normalized_ms}}},
              {"server", target.server}};
}

void PrintRow(const std::string& what, const RunSummary& r) {
  std::cerr << absl::StrFormat(
      "%-14s %7.3f req/s %8.1f tok/s  median norm %8.2f ms/tok  TTFT p50 %8.1f p99 %8.1f ms  "
      "TPOT p50 %7.2f ms  E2E p99 %8.1f ms  ok %lld/%lld\n",
      what, r.request_throughput, r.output_token_throughput, r.median_normalized_latency_ms,
      r.ttft_ms.p50, r.ttft_ms.p99, r.tpot_ms.p50, r.e2e_ms.p99,
      static_cast<long long>(r.succeeded), static_cast<long long>(r.total));
}

absl::StatusOr<int> Serve(const Flags& f, const std::string& command) {
  ORCA_ASSIGN_OR_RETURN(ServeSetup s, SetupFromFlags(f));
  s.command = command;
  for (Target& t : s.targets) ORCA_RETURN_IF_ERROR(ProbeServer(t, s.load.client.api_key));
  const bool closed = !s.concurrency.empty();
  std::vector<TraceRequest> base;
  if (s.trace_kind == "file") {
    ORCA_ASSIGN_OR_RETURN(base, LoadJsonlTrace(f.GetString("trace-file"), s.trace));
    if (base.empty()) return absl::InvalidArgumentError("the trace file has no requests");
  } else {
    TraceOptions t = s.trace;
    t.rate = 1.0;
    t.num_requests = s.num_requests;
    if (!closed && s.duration > 0) {
      const double max_rate = *std::max_element(s.rates.begin(), s.rates.end());
      t.num_requests = std::max<int64_t>(1, std::llround(max_rate * s.duration));
    }
    ORCA_ASSIGN_OR_RETURN(base, GenerateTrace(t));
  }
  const std::vector<double>& knobs = closed ? s.concurrency : s.rates;
  const bool sweep = knobs.size() > 1 || s.targets.size() > 1 || !f.GetString("sweep").empty() ||
                     !f.GetString("sweep-concurrency").empty();
  json runs = json::array();
  bool all_ok = true;
  for (size_t k = 0; k < knobs.size(); ++k) {
    const double knob = knobs[k];
    // Every target gets the same requests at this point (fresh prompts per point).
    std::vector<TraceRequest> trace = PointTrace(s, base, k, knob, closed);
    if (k == 0 && !f.GetString("write-trace").empty()) {
      ORCA_RETURN_IF_ERROR(WriteFile(f.GetString("write-trace"), TraceToJsonl(trace, true)));
    }
    for (const Target& target : s.targets) {
      if (!runs.empty() && s.cooldown > 0) {
        std::this_thread::sleep_for(std::chrono::duration<double>(s.cooldown));
      }
      LoadOptions lo = s.load;
      lo.client.base_url = target.url;
      lo.client.model = target.model;
      lo.concurrency = closed ? static_cast<int32_t>(knob) : 0;
      const std::string what =
          closed ? absl::StrFormat("C=%g", knob) : absl::StrFormat("rate=%g", knob);
      lo.progress_label = absl::StrCat("[", target.label, " ", what, "]");
      LoadResult result = RunLoad(trace, lo);
      RunSummary summary = SummarizeRun(result.records, result.duration_s, s.slo);
      PrintRow(s.targets.size() > 1 ? absl::StrCat(target.label, " ", what) : what, summary);
      all_ok = all_ok && summary.failed == 0;
      json config = ConfigJson(s, target);
      config["mode"] = closed ? "closed" : "open";
      config["rate"] = closed ? 0.0 : knob;
      config["concurrency"] = closed ? static_cast<int64_t>(knob) : 0;
      config["trace"]["num_requests"] = static_cast<int64_t>(trace.size());
      json doc = ServeDocument(target.label, config, summary, s.slo, result.records,
                               f.GetBool("save-requests"));
      if (!sweep) {
        ORCA_RETURN_IF_ERROR(WriteJson(doc, f.GetString("out")));
        return all_ok || !f.GetBool("require-success") ? 0 : 3;
      }
      doc["load_average"] = doc["machine"].value("load_average", "");  // others' load, if any
      doc.erase("machine");
      runs.push_back(std::move(doc));
    }
  }
  std::vector<std::string> labels;
  json targets = json::array();
  for (const Target& t : s.targets) {
    labels.push_back(t.label);
    targets.push_back(
        {{"url", t.url}, {"label", t.label}, {"model", t.model}, {"server", t.server}});
  }
  const std::string label = absl::StrJoin(labels, " vs ");
  json config = ConfigJson(s, s.targets[0]);
  for (const char* per_target : {"url", "model", "server"}) config.erase(per_target);
  config["targets"] = targets;
  config["mode"] = closed ? "closed" : "open";
  config[closed ? "concurrency" : "rates"] = knobs;
  json sweep_doc = {{"schema", kSweepSchema}, {"label", label},           {"started_at", UtcNow()},
                    {"config", config},       {"machine", MachineInfo()}, {"runs", runs}};
  ORCA_RETURN_IF_ERROR(WriteJson(sweep_doc, f.GetString("out")));
  std::string png = f.GetString("plot");
  if (png.empty() && !f.GetString("out").empty() && f.GetString("out") != "-") {
    png = WithExtension(f.GetString("out"), ".png");
  }
  if (!png.empty()) {
    ORCA_ASSIGN_OR_RETURN(auto points, RunPoints(sweep_doc, "sweep"));
    std::string title = f.GetString("title");
    if (title.empty()) title = "median normalized latency vs throughput (" + label + ")";
    ORCA_RETURN_IF_ERROR(RenderPng(LatencyThroughputPlot(points, title), png));
    std::cerr << "wrote " << png << "\n";
  }
  return all_ok || !f.GetBool("require-success") ? 0 : 3;
}

}  // namespace

int RunServeBench(int argc, char** argv) {
  Flags flags;
  AddServeFlags(flags);
  if (auto st = flags.Parse(argc, argv, 0); !st.ok()) {
    std::cerr << "orca bench serve: " << st.message() << "\n";
    return 2;
  }
  if (flags.GetBool("help")) {
    std::cout << "usage: orca bench serve --url URL [flags]\n\n" << flags.Help();
    return 0;
  }
  if (!flags.positional().empty()) {
    std::cerr << "orca bench serve: unexpected argument '" << flags.positional()[0] << "'\n";
    return 2;
  }
  auto rc = Serve(flags, CommandLine("orca bench serve", argc, argv));
  if (!rc.ok()) {
    std::cerr << "orca bench serve: " << rc.status().message() << "\n";
    return rc.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  return *rc;
}

}  // namespace orca::bench
