// What one benchmark run measured, and the statistics reported for it.
//
// Definitions (all latencies from the moment the request was sent):
//   TTFT         time to the first streamed chunk that carries output;
//   ITL          every gap between consecutive output-carrying chunks;
//   TPOT         per request (E2E - TTFT) / (output tokens - 1), requests with >= 2 tokens;
//   E2E          time to the end of the stream;
//   normalized   E2E / output tokens, in ms per token: the ORCA paper's "normalized
//   latency"     latency" (section 6.2), whose median over requests is Figure 10's y axis.
// Percentiles interpolate linearly between closest ranks (numpy's default): the p-th
// percentile of sorted x[0..n-1] is x at fractional index p/100 * (n - 1).
// Only successful requests enter the latency statistics; throughput counts successful
// requests and their tokens over the run's duration (first send to last completion).
// Pure functions; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace orca::bench {

// One request's outcome, filled in by the client.
struct RequestRecord {
  int64_t index = 0;
  int32_t input_len = 0;
  int32_t expected_output = 0;  // max_tokens asked for (ignore_eos)
  double send_s = 0;            // when it was sent, from the run's start
  bool ok = false;
  std::string failure;        // short reason class ("http_503", "token_count", ...) when !ok
  std::string error;          // the detail
  int32_t output_tokens = 0;  // usage.completion_tokens (or chunks counted when absent)
  double ttft_s = 0;
  double e2e_s = 0;
  std::vector<double> itl_s;  // gaps between output chunks
};

struct Distribution {
  int64_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, min = 0, max = 0;
};

// Service-level objectives for goodput; a value <= 0 is not checked.
struct Slo {
  double ttft_ms = 0;
  double tpot_ms = 0;
  double e2e_ms = 0;
  double normalized_ms = 0;
  bool any() const { return ttft_ms > 0 || tpot_ms > 0 || e2e_ms > 0 || normalized_ms > 0; }
};

struct RunSummary {
  double duration_s = 0;
  int64_t total = 0, succeeded = 0, failed = 0;
  std::map<std::string, int64_t> failures;  // by reason class
  int64_t input_tokens = 0, output_tokens = 0;
  double request_throughput = 0;       // successful requests / s
  double output_token_throughput = 0;  // output tokens / s
  double total_token_throughput = 0;   // (input + output) tokens / s
  double median_normalized_latency_ms = 0;
  Distribution normalized_ms, ttft_ms, tpot_ms, itl_ms, e2e_ms;
  // Requests that succeeded and met every SLO.
  int64_t good = 0;
  double goodput = 0;           // good requests / s
  double goodput_fraction = 0;  // good / total
};

// Returns the p-th percentile (0..100) of `values` (any order; copied), 0 when empty.
double Percentile(std::vector<double> values, double p);
// Returns count, mean, p50/p90/p99, min and max of `values`.
Distribution Summarize(const std::vector<double>& values);
// Returns E2E / output tokens in ms per token (0 for a request without tokens).
double NormalizedLatencyMs(const RequestRecord& r);
// Returns (E2E - TTFT) / (tokens - 1) in ms, or a negative value for < 2 tokens.
double TpotMs(const RequestRecord& r);
// Returns true when `r` succeeded and meets every objective of `slo`.
bool MeetsSlo(const RequestRecord& r, const Slo& slo);
// Computes the run's statistics over `records` measured in `duration_s` seconds.
RunSummary SummarizeRun(const std::vector<RequestRecord>& records, double duration_s,
                        const Slo& slo);

}  // namespace orca::bench
