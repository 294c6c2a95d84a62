#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "bench/engine_sweep/engine_sweep.h"
#include "bench/engine_sweep/gemm_rate.h"
#include "bench/loadgen/plot.h"
#include "bench/loadgen/report.h"
#include "engine/model/random_checkpoint.h"

namespace orca::bench {
namespace {

using nlohmann::json;

std::string TempPath(const std::string& name) {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp") + "/orca-bench-test-" + std::to_string(getpid()) +
         "-" + name;
}

// Skips the test when matplotlib is missing, except under CI=true where it must exist.
#define REQUIRE_PLOTTING()                                  \
  do {                                                      \
    absl::Status avail = PlottingAvailable();               \
    if (!avail.ok()) {                                      \
      const char* ci = std::getenv("CI");                   \
      if (ci && std::string(ci) == "true") FAIL() << avail; \
      GTEST_SKIP() << avail;                                \
    }                                                       \
  } while (0)

std::vector<RequestRecord> SomeRecords() {
  std::vector<RequestRecord> recs(3);
  for (int i = 0; i < 3; ++i) {
    recs[i].index = i;
    recs[i].ok = i != 2;
    recs[i].input_len = 8;
    recs[i].expected_output = 4;
    recs[i].output_tokens = 4;
    recs[i].ttft_s = 0.1;
    recs[i].e2e_s = 0.4;
    recs[i].itl_s = {0.1, 0.1, 0.1};
  }
  recs[2].failure = "token_count";
  return recs;
}

json ServeDoc(const std::string& label, double rate, double throughput, double latency) {
  RunSummary s;
  s.request_throughput = throughput;
  s.median_normalized_latency_ms = latency;
  return ServeDocument(label, json{{"rate", rate}}, s, Slo{}, {}, false);
}

TEST(ReportTest, ServeDocumentIsComplete) {
  Slo slo;
  slo.ttft_ms = 500;
  auto recs = SomeRecords();
  RunSummary s = SummarizeRun(recs, 1.0, slo);
  json config = {{"url", "http://x"}, {"rate", 2.0}};
  json doc = ServeDocument("orca", config, s, slo, recs, true);
  EXPECT_EQ(doc["schema"], kServeSchema);
  EXPECT_EQ(doc["label"], "orca");
  EXPECT_EQ(doc["config"], config);
  for (const char* k : {"hostname", "kernel", "cpu_model", "logical_cores", "memory"}) {
    EXPECT_TRUE(doc["machine"].contains(k)) << k;
  }
  const json& res = doc["results"];
  for (const auto& k : RequiredResultKeys()) EXPECT_TRUE(res.contains(k)) << k;
  for (const char* d : {"ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "normalized_latency_ms"}) {
    for (const char* p : {"count", "mean", "p50", "p90", "p99", "min", "max"}) {
      EXPECT_TRUE(res[d].contains(p)) << d << "." << p;
    }
  }
  EXPECT_EQ(res["requests"]["failed"], 1);
  EXPECT_EQ(res["failures"]["token_count"], 1);
  EXPECT_DOUBLE_EQ(res["median_normalized_latency_ms"].get<double>(), 100.0);
  EXPECT_EQ(res["goodput"]["good_requests"], 2);
  EXPECT_EQ(res["goodput"]["slo"]["ttft_ms"], 500.0);
  ASSERT_EQ(doc["requests"].size(), 3u);
  EXPECT_EQ(doc["requests"][2]["failure"], "token_count");
  EXPECT_FALSE(ServeDocument("x", config, s, slo, recs, false).contains("requests"));
}

TEST(ReportTest, RunPointsReadsServeAndSweepDocuments) {
  auto one = RunPoints(ServeDoc("a", 2, 1.9, 30), "one.json");
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].label, "a");
  EXPECT_DOUBLE_EQ((*one)[0].offered_rate, 2);
  EXPECT_DOUBLE_EQ((*one)[0].throughput, 1.9);
  EXPECT_DOUBLE_EQ((*one)[0].median_normalized_ms, 30);
  json sweep = {{"schema", kSweepSchema},
                {"label", "b"},
                {"runs", {ServeDoc("b", 1, 1, 10), ServeDoc("b", 4, 3.5, 50)}}};
  auto pts = RunPoints(sweep, "sweep.json");
  ASSERT_TRUE(pts.ok());
  ASSERT_EQ(pts->size(), 2u);
  EXPECT_DOUBLE_EQ((*pts)[1].throughput, 3.5);
  auto bad = RunPoints(json{{"schema", "other"}}, "x.json");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("x.json"), std::string::npos);
}

TEST(ReportTest, ThroughputAtLatencyInterpolatesTheCrossing) {
  // Offered 1, 2, 3 req/s -> latencies 10, 20, 60 ms/token; given out of order.
  std::vector<CurvePoint> curve = {{"a", 3, 2.5, 60, 0}, {"a", 1, 1, 10, 0}, {"a", 2, 2, 20, 0}};
  EXPECT_DOUBLE_EQ(ThroughputAtLatency(curve, 15), 1.5);  // halfway from 1 to 2 req/s
  EXPECT_DOUBLE_EQ(ThroughputAtLatency(curve, 20), 2.0);
  EXPECT_DOUBLE_EQ(ThroughputAtLatency(curve, 40), 2.25);  // halfway from 2 to 2.5 req/s
  EXPECT_DOUBLE_EQ(ThroughputAtLatency(curve, 100), 2.5);
  EXPECT_DOUBLE_EQ(ThroughputAtLatency(curve, 5), 0.0);
}

void ExpectValidPng(const std::string& path) {
  ASSERT_TRUE(std::filesystem::exists(path)) << path;
  const auto size = std::filesystem::file_size(path);
  EXPECT_GT(size, 1000u);
  EXPECT_LT(size, 200u * 1024u);  // small enough to commit
  std::ifstream in(path, std::ios::binary);
  char head[24] = {0};
  in.read(head, sizeof(head));
  EXPECT_EQ(std::string(head, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(std::string(head + 12, 4), "IHDR");
  const uint32_t width = (uint8_t(head[16]) << 24) | (uint8_t(head[17]) << 16) |
                         (uint8_t(head[18]) << 8) | uint8_t(head[19]);
  EXPECT_GT(width, 100u);
}

TEST(PlotTest, Figure10IsAValidPng) {
  REQUIRE_PLOTTING();
  std::vector<CurvePoint> pts = {{"iteration", 1, 1, 20, 0},
                                 {"iteration", 4, 3.9, 25, 0},
                                 {"iteration", 2, 2, 21, 0},
                                 {"request", 1, 0.9, 40, 0},
                                 {"request", 2, 1.2, 90, 1}};
  PlotSpec spec = LatencyThroughputPlot(pts, "test", {{"2x unloaded", 40}});
  ASSERT_EQ(spec.panels.size(), 1u);
  ASSERT_EQ(spec.panels[0].series.size(), 3u);
  EXPECT_EQ(spec.panels[0].series[0].x, (std::vector<double>{1, 2, 3.9}));  // by offered rate
  // The bound: dashed, level at its latency, across every curve's throughputs.
  const PlotSeries& bound = spec.panels[0].series[2];
  EXPECT_EQ(bound.label, "2x unloaded");
  EXPECT_EQ(bound.style, "dashed");
  EXPECT_EQ(bound.x, (std::vector<double>{0.9, 3.9}));
  EXPECT_EQ(bound.y, (std::vector<double>{40, 40}));
  const std::string png = TempPath("fig10.png");
  ASSERT_TRUE(RenderPng(spec, png).ok());
  ExpectValidPng(png);
  std::filesystem::remove(png);
}

TEST(PlotTest, RenderFailsCleanlyOnAnUnwritablePath) {
  REQUIRE_PLOTTING();
  PlotSpec spec = LatencyThroughputPlot({{"a", 1, 1, 1, 0}}, "t");
  absl::Status s = RenderPng(spec, "/nonexistent-dir/x.png");
  EXPECT_FALSE(s.ok());
  EXPECT_FALSE(RenderPng(PlotSpec{}, TempPath("empty.png")).ok());
}

TEST(EngineSweepTest, FloorsByHand) {
  DecodeWork w;
  w.gemm_params = 1e8;
  w.kv_bytes_per_token = 1000;
  w.attn_flops_per_ctx = 100;
  Roofline roof{100.0, 10.0};  // 100 GFLOP/s, 10 GB/s
  // bytes = 1e8 * 4 + 2 * 50 * 1000 = 400.1 MB -> 40.01 ms; flops = 2e8 * 2 + 2 * 50 * 100.
  DecodeFloors f = DecodeFloorsMs(w, 4.0, 2, 50, roof);
  EXPECT_NEAR(f.bandwidth_ms, 40.01, 1e-9);
  EXPECT_NEAR(f.flops_ms, (4e8 + 1e4) / 1e11 * 1e3, 1e-9);
  // Sequential: the GEMMs at max(400 MB -> 40 ms, 4e8 FLOPs -> 4 ms), then attention at
  // max(100 kB -> 0.01 ms, 1e4 FLOPs -> 1e-4 ms).
  EXPECT_NEAR(f.sequential_ms, 40.0 + 0.01, 1e-9);
  EXPECT_NEAR(f.roof_ms(), 40.01, 1e-9);

  // Prefill of 2 x 10 tokens: the LM head (3e7 of the 1e8 parameters) only for the 2 rows
  // that sample; attention over 5 cached tokens on average; weights read once, 20
  // tokens' KV written.
  w.head_params = 3e7;
  DecodeFloors p = PrefillFloorsMs(w, 4.0, 2, 10, roof);
  EXPECT_NEAR(p.flops_ms, (2 * 7e7 * 20 + 2 * 3e7 * 2 + 20 * 5 * 100) / 1e11 * 1e3, 1e-9);
  EXPECT_NEAR(p.bandwidth_ms, (4e8 + 20 * 1000) / 1e10 * 1e3, 1e-9);
  // Sequential: the GEMMs at max(400 MB -> 40 ms, 2.92e9 FLOPs -> 29.2 ms), attention at
  // max(20 kB written -> 0.002 ms, 1e4 FLOPs -> 1e-4 ms).
  EXPECT_NEAR(p.sequential_ms, 40.0 + 0.002, 1e-9);
}

TEST(EngineSweepTest, BfloatSixteenGemmsCountAtTheirOwnRate) {
  DecodeWork w;
  w.gemm_params = 1e8;
  w.kv_bytes_per_token = 1000;
  w.attn_flops_per_ctx = 1000;
  Roofline roof{100.0, 100.0};  // sgemm 100 GFLOP/s, 100 GB/s
  roof.bf16_gemm_gflops = 250;
  // 16 sequences of 500 cached tokens: GEMMs 3.2e9 FLOPs, attention 8e6 FLOPs and 8 MB.
  const double gemm_flops = 2 * 1e8 * 16, attn_flops = 16 * 500 * 1000.0;
  DecodeFloors f32 = DecodeFloorsMs(w, 4.0, 16, 500, roof);  // float32 weights: sgemm's rate
  EXPECT_NEAR(f32.flops_ms, (gemm_flops + attn_flops) / 1e11 * 1e3, 1e-9);
  w.bf16_weights = true;  // bfloat16: the GEMMs at 250, attention still at sgemm's 100
  DecodeFloors bf16 = DecodeFloorsMs(w, 2.0, 16, 500, roof);
  EXPECT_NEAR(bf16.flops_ms, gemm_flops / 2.5e11 * 1e3 + attn_flops / 1e11 * 1e3, 1e-9);
  EXPECT_NEAR(bf16.bandwidth_ms, (2e8 + 8e6) / 1e11 * 1e3, 1e-9);
  // GEMMs: max(2 ms of weights, 12.8 ms of FLOPs); attention: max(0.08, 0.08) ms.
  EXPECT_NEAR(bf16.sequential_ms, 12.8 + 0.08, 1e-9);
  // Where the products are slower than sgemm (or were not measured), sgemm's rate.
  roof.bf16_gemm_gflops = 60;
  EXPECT_NEAR(DecodeFloorsMs(w, 2.0, 16, 500, roof).flops_ms, f32.flops_ms, 1e-9);
  roof.bf16_gemm_gflops = 0;
  EXPECT_DOUBLE_EQ(roof.GemmGflops(true), 100.0);
}

// The GEMM rates' shared timer: one untimed warm-up call, then timed calls until the
// time is up (one at least), each counted as 2 n^3 FLOPs.
TEST(GemmRateTest, OneWarmUpCallThenTimedCallsAtTheirFlops) {
  int calls = 0;
  const auto count = [&] { ++calls; };
  EXPECT_GE(GflopsOfRuns(10, 0.0, count), 0.0);
  EXPECT_EQ(calls, 2);  // the warm-up and one timed call
  calls = 0;
  const auto t0 = std::chrono::steady_clock::now();
  const double gflops = GflopsOfRuns(100, 0.02, count);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_GE(calls, 2);
  // (calls - 1) timed calls of 2e6 FLOPs within at most the whole call's wall time.
  EXPECT_GE(gflops, 2e6 * (calls - 1) / wall / 1e9);
  EXPECT_LE(gflops, 2e6 * (calls - 1) / 0.02 / 1e9);
}

TEST(EngineSweepTest, TinyModelSweepIsCompleteAndPlots) {
  const std::string dir = TempPath("tiny-model");
  auto cfg = PresetConfig("tiny");
  ASSERT_TRUE(cfg.ok());
  ASSERT_TRUE(WriteRandomCheckpoint(*cfg, dir, 1).ok());
  EngineSweepOptions o;
  o.model_dir = dir;
  o.batch_sizes = {1, 3};
  o.input_len = 5;
  o.output_len = 4;
  o.threads = 1;
  o.roofline_s = 0.01;
  int lines = 0;
  auto doc = RunEngineSweep(o, [&](const std::string&) { ++lines; });
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ((*doc)["schema"], kEngineSchema);
  EXPECT_GT((*doc)["roofline"]["sgemm_gflops"].get<double>(), 0);
  EXPECT_GT((*doc)["roofline"]["read_gbs"].get<double>(), 0);
  EXPECT_GT((*doc)["roofline"]["read_gbs_one_core"].get<double>(), 0);
  ASSERT_EQ((*doc)["points"].size(), 2u);
  for (const auto& p : (*doc)["points"]) {
    for (const char* k :
         {"batch", "total_s", "prefill_s", "decode_iterations", "decode_iter_ms",
          "floor_decode_bandwidth_ms", "floor_decode_flops_ms", "decode_roof_fraction",
          "floor_decode_sequential_ms", "decode_sequential_roof_fraction", "floor_prefill_s",
          "prefill_roof_fraction", "floor_total_s", "output_tokens_per_s"}) {
      EXPECT_TRUE(p.contains(k)) << k;
    }
    EXPECT_EQ(p["decode_iterations"], 3);
    EXPECT_GT(p["total_s"].get<double>(), 0);
    // The decode iterations by operation: the GEMMs and attention ran, and together the
    // operations took no more than the iterations (the prefill's are not counted).
    const auto& ops = p["decode_op_ms"];
    EXPECT_GT(ops.value("linear", 0.0), 0);
    EXPECT_GT(ops.value("attention", 0.0), 0);
    ASSERT_TRUE(ops.contains("unattributed"));
    EXPECT_GE(ops["unattributed"].get<double>(), -1e-9);  // (sums of the same intervals)
    // The prefill's alone: its operations fit inside its one iteration (the warm-up's
    // and the decodes' are not counted).
    const auto& prefill = p["prefill_op_ms"];
    EXPECT_GT(prefill.value("linear", 0.0), 0);
    EXPECT_GT(prefill.value("attention", 0.0), 0);
    EXPECT_GE(prefill.value("unattributed", -1.0), -1e-9);
    EXPECT_LE(prefill.value("linear", 0.0), p["prefill_s"].get<double>() * 1e3);
  }
  EXPECT_EQ(lines, 5);  // the roofline (measuring, measured), the warm-up, one per batch size

  REQUIRE_PLOTTING();
  auto spec = EngineSweepPlot({*doc}, {"tiny"}, "engine");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->panels.size(), 2u);
  const std::string png = TempPath("engine.png");
  ASSERT_TRUE(RenderPng(*spec, png).ok());
  ExpectValidPng(png);
  std::filesystem::remove(png);
}

}  // namespace
}  // namespace orca::bench
