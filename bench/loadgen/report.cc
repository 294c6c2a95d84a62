#include "bench/loadgen/report.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"

namespace orca::bench {
namespace {

using nlohmann::json;

// Returns the value after "key<spaces>:" on the first matching line of `path`.
std::string ProcField(const char* path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string v = line.substr(colon + 1);
    v.erase(0, v.find_first_not_of(" \t"));
    return v;
  }
  return "";
}

double Num(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

}  // namespace

std::vector<std::string> RequiredResultKeys() {
  return {"duration_s",
          "requests",
          "failures",
          "request_throughput",
          "output_token_throughput",
          "total_token_throughput",
          "input_tokens",
          "output_tokens",
          "median_normalized_latency_ms",
          "normalized_latency_ms",
          "ttft_ms",
          "tpot_ms",
          "itl_ms",
          "e2e_ms",
          "goodput"};
}

nlohmann::json MachineInfo() {
  json m;
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  m["hostname"] = host;
  struct utsname u;
  if (uname(&u) == 0) m["kernel"] = absl::StrCat(u.sysname, " ", u.release, " ", u.machine);
  m["cpu_model"] = ProcField("/proc/cpuinfo", "model name");
  m["logical_cores"] = std::thread::hardware_concurrency();
  m["memory"] = ProcField("/proc/meminfo", "MemTotal");
  std::ifstream load("/proc/loadavg");
  std::string l1, l5, l15;
  if (load >> l1 >> l5 >> l15) m["load_average"] = absl::StrCat(l1, " ", l5, " ", l15);
  return m;
}

std::string UtcNow() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json DistributionJson(const Distribution& d) {
  return json{{"count", d.count}, {"mean", d.mean}, {"p50", d.p50}, {"p90", d.p90},
              {"p99", d.p99},     {"min", d.min},   {"max", d.max}};
}

nlohmann::json SummaryJson(const RunSummary& s, const Slo& slo) {
  json failures = json::object();
  for (const auto& [reason, n] : s.failures) failures[reason] = n;
  return json{{"duration_s", s.duration_s},
              {"requests", {{"total", s.total}, {"succeeded", s.succeeded}, {"failed", s.failed}}},
              {"failures", failures},
              {"request_throughput", s.request_throughput},
              {"output_token_throughput", s.output_token_throughput},
              {"total_token_throughput", s.total_token_throughput},
              {"input_tokens", s.input_tokens},
              {"output_tokens", s.output_tokens},
              {"median_normalized_latency_ms", s.median_normalized_latency_ms},
              {"normalized_latency_ms", DistributionJson(s.normalized_ms)},
              {"ttft_ms", DistributionJson(s.ttft_ms)},
              {"tpot_ms", DistributionJson(s.tpot_ms)},
              {"itl_ms", DistributionJson(s.itl_ms)},
              {"e2e_ms", DistributionJson(s.e2e_ms)},
              {"goodput",
               {{"slo",
                 {{"ttft_ms", slo.ttft_ms},
                  {"tpot_ms", slo.tpot_ms},
                  {"e2e_ms", slo.e2e_ms},
                  {"normalized_ms", slo.normalized_ms}}},
                {"good_requests", s.good},
                {"requests_per_s", s.goodput},
                {"fraction", s.goodput_fraction}}}};
}

nlohmann::json RecordJson(const RequestRecord& r) {
  json j = {{"index", r.index},
            {"input_len", r.input_len},
            {"expected_output", r.expected_output},
            {"send_s", r.send_s},
            {"ok", r.ok},
            {"output_tokens", r.output_tokens},
            {"ttft_s", r.ttft_s},
            {"e2e_s", r.e2e_s},
            {"itl_s", r.itl_s}};
  if (!r.ok) {
    j["failure"] = r.failure;
    j["error"] = r.error;
  }
  return j;
}

nlohmann::json ServeDocument(const std::string& label, const nlohmann::json& config,
                             const RunSummary& summary, const Slo& slo,
                             const std::vector<RequestRecord>& records, bool with_requests) {
  json doc = {{"schema", kServeSchema},   {"label", label},
              {"started_at", UtcNow()},   {"config", config},
              {"machine", MachineInfo()}, {"results", SummaryJson(summary, slo)}};
  if (with_requests) {
    json arr = json::array();
    for (const auto& r : records) arr.push_back(RecordJson(r));
    doc["requests"] = std::move(arr);
  }
  return doc;
}

absl::StatusOr<std::vector<CurvePoint>> RunPoints(const nlohmann::json& doc,
                                                  const std::string& source) {
  if (!doc.is_object()) return absl::InvalidArgumentError(source + ": not a JSON object");
  const std::string schema = doc.value("schema", "");
  std::vector<const json*> runs;
  if (schema == kServeSchema) {
    runs.push_back(&doc);
  } else if (schema == kSweepSchema && doc.contains("runs") && doc["runs"].is_array()) {
    for (const auto& r : doc["runs"]) runs.push_back(&r);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": not an orca bench serve or sweep result (schema '", schema, "')"));
  }
  std::vector<CurvePoint> points;
  for (const json* r : runs) {
    if (!r->is_object() || !r->contains("results") || !(*r)["results"].is_object()) {
      return absl::InvalidArgumentError(source + ": a run has no results object");
    }
    const json& res = (*r)["results"];
    CurvePoint p;
    p.label = r->value("label", doc.value("label", std::string("run")));
    if (r->contains("config") && (*r)["config"].is_object()) {
      p.offered_rate = Num((*r)["config"], "rate");
    }
    p.throughput = Num(res, "request_throughput");
    p.median_normalized_ms = Num(res, "median_normalized_latency_ms");
    if (res.contains("requests") && res["requests"].is_object()) {
      p.failed = static_cast<int64_t>(Num(res["requests"], "failed"));
    }
    points.push_back(p);
  }
  return points;
}

double ThroughputAtLatency(std::vector<CurvePoint> pts, double latency_ms) {
  std::stable_sort(pts.begin(), pts.end(), [](const CurvePoint& a, const CurvePoint& b) {
    return a.offered_rate != b.offered_rate ? a.offered_rate < b.offered_rate
                                            : a.throughput < b.throughput;
  });
  double best = 0;
  for (size_t i = 0; i < pts.size(); ++i) {
    const CurvePoint& p = pts[i];
    if (p.median_normalized_ms > latency_ms) continue;
    best = std::max(best, p.throughput);
    if (i + 1 < pts.size() && pts[i + 1].median_normalized_ms > latency_ms) {
      const CurvePoint& q = pts[i + 1];
      const double f =
          (latency_ms - p.median_normalized_ms) / (q.median_normalized_ms - p.median_normalized_ms);
      best = std::max(best, p.throughput + f * (q.throughput - p.throughput));
    }
  }
  return best;
}

}  // namespace orca::bench
