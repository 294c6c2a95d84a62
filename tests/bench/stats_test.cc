#include "bench/loadgen/stats.h"

#include <gtest/gtest.h>

namespace orca::bench {
namespace {

RequestRecord Ok(double ttft_s, double e2e_s, int32_t tokens, std::vector<double> itl = {}) {
  RequestRecord r;
  r.ok = true;
  r.ttft_s = ttft_s;
  r.e2e_s = e2e_s;
  r.output_tokens = tokens;
  r.expected_output = tokens;
  r.input_len = 10;
  r.itl_s = std::move(itl);
  return r;
}

TEST(StatsTest, PercentilesInterpolateBetweenClosestRanks) {
  // numpy.percentile([4, 1, 3, 2], [0, 50, 90, 99, 100]) = [1, 2.5, 3.7, 3.97, 4]
  std::vector<double> v = {4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(Percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(Percentile(v, 50), 2.5);
  EXPECT_NEAR(Percentile(v, 90), 3.7, 1e-12);
  EXPECT_NEAR(Percentile(v, 99), 3.97, 1e-12);
  EXPECT_DOUBLE_EQ(Percentile(v, 100), 4);
  EXPECT_DOUBLE_EQ(Percentile({}, 50), 0);
  EXPECT_DOUBLE_EQ(Percentile({7}, 99), 7);
  // 1..101: the p-th percentile is 1 + p exactly.
  std::vector<double> seq;
  for (int i = 101; i >= 1; --i) seq.push_back(i);
  EXPECT_DOUBLE_EQ(Percentile(seq, 50), 51);
  EXPECT_DOUBLE_EQ(Percentile(seq, 90), 91);
  EXPECT_DOUBLE_EQ(Percentile(seq, 99), 100);
}

TEST(StatsTest, SummarizeGivesMeanMinMax) {
  Distribution d = Summarize({2, 4, 6, 8});
  EXPECT_EQ(d.count, 4);
  EXPECT_DOUBLE_EQ(d.mean, 5);
  EXPECT_DOUBLE_EQ(d.p50, 5);
  EXPECT_DOUBLE_EQ(d.min, 2);
  EXPECT_DOUBLE_EQ(d.max, 8);
  EXPECT_EQ(Summarize({}).count, 0);
}

TEST(StatsTest, NormalizedLatencyIsEndToEndOverOutputTokens) {
  EXPECT_DOUBLE_EQ(NormalizedLatencyMs(Ok(0.5, 2.0, 100)), 20.0);
  EXPECT_DOUBLE_EQ(NormalizedLatencyMs(Ok(0.1, 0.3, 1)), 300.0);
  EXPECT_DOUBLE_EQ(NormalizedLatencyMs(Ok(0, 0, 0)), 0.0);
  // (2.0 - 0.5) s over the 100 tokens after the first = 15 ms.
  EXPECT_DOUBLE_EQ(TpotMs(Ok(0.5, 2.0, 101)), 15.0);
  EXPECT_LT(TpotMs(Ok(0.5, 0.5, 1)), 0);
}

TEST(StatsTest, RunSummaryByHand) {
  std::vector<RequestRecord> recs = {
      Ok(0.100, 1.000, 10, {0.1, 0.1}),  // normalized 100 ms, TPOT 100 ms
      Ok(0.200, 0.600, 5, {0.1}),        // normalized 120 ms, TPOT 100 ms
      Ok(0.050, 0.450, 9),               // normalized  50 ms, TPOT  50 ms
  };
  RequestRecord failed;
  failed.failure = "token_count";
  failed.output_tokens = 3;
  recs.push_back(failed);
  RequestRecord refused;
  refused.failure = "http_429";
  recs.push_back(refused);

  Slo slo;
  slo.ttft_ms = 150;  // the second request misses it
  RunSummary s = SummarizeRun(recs, 2.0, slo);
  EXPECT_EQ(s.total, 5);
  EXPECT_EQ(s.succeeded, 3);
  EXPECT_EQ(s.failed, 2);
  EXPECT_EQ(s.failures.at("token_count"), 1);
  EXPECT_EQ(s.failures.at("http_429"), 1);
  EXPECT_EQ(s.output_tokens, 24);  // successful requests only
  EXPECT_EQ(s.input_tokens, 30);
  EXPECT_DOUBLE_EQ(s.request_throughput, 1.5);
  EXPECT_DOUBLE_EQ(s.output_token_throughput, 12.0);
  EXPECT_DOUBLE_EQ(s.total_token_throughput, 27.0);
  EXPECT_NEAR(s.median_normalized_latency_ms, 100.0, 1e-9);
  EXPECT_NEAR(s.normalized_ms.mean, 90.0, 1e-9);
  EXPECT_NEAR(s.ttft_ms.p50, 100.0, 1e-9);
  EXPECT_NEAR(s.tpot_ms.p50, 100.0, 1e-9);
  EXPECT_NEAR(s.e2e_ms.max, 1000.0, 1e-9);
  EXPECT_EQ(s.itl_ms.count, 3);
  EXPECT_NEAR(s.itl_ms.p99, 100.0, 1e-9);
  EXPECT_EQ(s.good, 2);
  EXPECT_DOUBLE_EQ(s.goodput, 1.0);
  EXPECT_DOUBLE_EQ(s.goodput_fraction, 0.4);
}

TEST(StatsTest, SloChecksEveryObjective) {
  RequestRecord r = Ok(0.2, 1.2, 11);  // TPOT 100 ms, normalized ~109 ms
  EXPECT_TRUE(MeetsSlo(r, Slo{}));
  EXPECT_TRUE(MeetsSlo(r, Slo{200.5, 100.5, 1200.5, 110}));
  EXPECT_FALSE(MeetsSlo(r, Slo{199.5, 0, 0, 0}));
  EXPECT_FALSE(MeetsSlo(r, Slo{0, 99.5, 0, 0}));
  EXPECT_FALSE(MeetsSlo(r, Slo{0, 0, 1199.5, 0}));
  EXPECT_FALSE(MeetsSlo(r, Slo{0, 0, 0, 100}));
  r.ok = false;
  EXPECT_FALSE(MeetsSlo(r, Slo{}));
}

}  // namespace
}  // namespace orca::bench
