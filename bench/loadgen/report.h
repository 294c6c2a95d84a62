// The JSON documents written by `orca bench`:
//
//   orca.bench.serve/v1  one run: {schema, label, started_at, config, machine, results
//                        [, requests]} where results holds the RunSummary fields
//                        (latencies in ms as {count, mean, p50, p90, p99, min, max});
//   orca.bench.sweep/v1  a sweep over request rates: {schema, label, started_at, config,
//                        machine, runs: [serve documents without machine]}.
//
// Both carry enough to be re-plotted alone (label and the summary of every point).
// RunPoints() reads the points of any number of such documents back for plotting.
// Pure functions except MachineInfo (reads /proc and uname); all thread-compatible.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "bench/loadgen/stats.h"

namespace orca::bench {

inline constexpr char kServeSchema[] = "orca.bench.serve/v1";
inline constexpr char kSweepSchema[] = "orca.bench.sweep/v1";

// Returns the keys every serve document's "results" object has (for completeness checks).
std::vector<std::string> RequiredResultKeys();

// Returns the machine: host name, kernel, CPU model, logical cores, memory, load average.
nlohmann::json MachineInfo();
// Returns the current UTC time as ISO 8601.
std::string UtcNow();

nlohmann::json DistributionJson(const Distribution& d);
nlohmann::json SummaryJson(const RunSummary& s, const Slo& slo);
nlohmann::json RecordJson(const RequestRecord& r);

// Builds a serve document. `config` is stored as given; `records` are included only
// when `with_requests`.
nlohmann::json ServeDocument(const std::string& label, const nlohmann::json& config,
                             const RunSummary& summary, const Slo& slo,
                             const std::vector<RequestRecord>& records, bool with_requests);

// One point of a latency-throughput curve.
struct CurvePoint {
  std::string label;
  double offered_rate = 0;  // requests/s asked for (0: closed loop or unknown)
  double throughput = 0;    // successful requests/s
  double median_normalized_ms = 0;
  int64_t failed = 0;
};

// Returns the points of `doc` (a serve or sweep document); fails with InvalidArgument
// naming `source` when it is neither or lacks the summary fields.
absl::StatusOr<std::vector<CurvePoint>> RunPoints(const nlohmann::json& doc,
                                                  const std::string& source);

// Returns the highest throughput of the curve `points` (one label, any order; sorted
// here by offered rate, then throughput) whose median normalized latency is at or
// below `latency_ms`: the best such point, or the point where a segment from such a
// point to the next one crosses `latency_ms` (linear interpolation). 0 when no point
// is that low. A noisy curve may dip below the target after exceeding it; the dip counts.
double ThroughputAtLatency(std::vector<CurvePoint> points, double latency_ms);

}  // namespace orca::bench
