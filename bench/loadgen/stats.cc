#include "bench/loadgen/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace orca::bench {

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double idx = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(idx));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  const double frac = idx - static_cast<double>(lo);
  return v[lo] + (v[hi] - v[lo]) * frac;
}

Distribution Summarize(const std::vector<double>& v) {
  Distribution d;
  d.count = static_cast<int64_t>(v.size());
  if (v.empty()) return d;
  d.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  d.p50 = Percentile(v, 50);
  d.p90 = Percentile(v, 90);
  d.p99 = Percentile(v, 99);
  auto [mn, mx] = std::minmax_element(v.begin(), v.end());
  d.min = *mn;
  d.max = *mx;
  return d;
}

double NormalizedLatencyMs(const RequestRecord& r) {
  return r.output_tokens > 0 ? r.e2e_s * 1e3 / r.output_tokens : 0;
}

double TpotMs(const RequestRecord& r) {
  if (r.output_tokens < 2) return -1;
  return (r.e2e_s - r.ttft_s) * 1e3 / (r.output_tokens - 1);
}

bool MeetsSlo(const RequestRecord& r, const Slo& slo) {
  if (!r.ok) return false;
  if (slo.ttft_ms > 0 && r.ttft_s * 1e3 > slo.ttft_ms) return false;
  if (slo.tpot_ms > 0 && TpotMs(r) > slo.tpot_ms) return false;
  if (slo.e2e_ms > 0 && r.e2e_s * 1e3 > slo.e2e_ms) return false;
  if (slo.normalized_ms > 0 && NormalizedLatencyMs(r) > slo.normalized_ms) return false;
  return true;
}

RunSummary SummarizeRun(const std::vector<RequestRecord>& records, double duration_s,
                        const Slo& slo) {
  RunSummary s;
  s.duration_s = duration_s;
  s.total = static_cast<int64_t>(records.size());
  std::vector<double> norm, ttft, tpot, itl, e2e;
  for (const auto& r : records) {
    if (!r.ok) {
      ++s.failed;
      ++s.failures[r.failure.empty() ? "unknown" : r.failure];
      continue;
    }
    ++s.succeeded;
    s.input_tokens += r.input_len;
    s.output_tokens += r.output_tokens;
    norm.push_back(NormalizedLatencyMs(r));
    ttft.push_back(r.ttft_s * 1e3);
    e2e.push_back(r.e2e_s * 1e3);
    if (double t = TpotMs(r); t >= 0) tpot.push_back(t);
    for (double g : r.itl_s) itl.push_back(g * 1e3);
    if (MeetsSlo(r, slo)) ++s.good;
  }
  if (duration_s > 0) {
    s.request_throughput = static_cast<double>(s.succeeded) / duration_s;
    s.output_token_throughput = static_cast<double>(s.output_tokens) / duration_s;
    s.total_token_throughput = static_cast<double>(s.input_tokens + s.output_tokens) / duration_s;
    s.goodput = static_cast<double>(s.good) / duration_s;
  }
  s.goodput_fraction = s.total ? static_cast<double>(s.good) / static_cast<double>(s.total) : 0;
  s.normalized_ms = Summarize(norm);
  s.median_normalized_latency_ms = s.normalized_ms.p50;
  s.ttft_ms = Summarize(ttft);
  s.tpot_ms = Summarize(tpot);
  s.itl_ms = Summarize(itl);
  s.e2e_ms = Summarize(e2e);
  return s;
}

}  // namespace orca::bench
