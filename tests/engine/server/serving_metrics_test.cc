// ServingMetrics: its EngineObserver callbacks are driven by hand with known values, the
// gauges are refreshed from a real Engine on stories260K (held mid-run by an executor
// whose Wait() is gated, so its snapshot is known), and the exposition is checked
// family by family and sample by sample with the Prometheus Python client's parser
// (tests/engine/metrics/check_exposition.py). The vLLM-named series an endpoint picker
// reads must equal orca's own on every page, scraped step by step and concurrently.
#include "engine/server/serving_metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "engine/core/local_executor.h"
#include "nlohmann/json.hpp"
#include "tests/testutil/testutil.h"

namespace orca {
namespace {

using metrics::BucketBoundaries;
using metrics::ExponentialBuckets;
using metrics::Labels;

constexpr char kPython[] = "/usr/bin/python3";
constexpr char kModel[] = "stories260K";

// A LocalExecutor whose Wait() returns only while passes are left, and whose group
// status is set by the test.
class GatedExecutor : public Executor {
 public:
  explicit GatedExecutor(std::unique_ptr<Executor> inner) : inner_(std::move(inner)) {}

  const ModelConfig& config() const override { return inner_->config(); }
  int32_t num_kv_blocks() const override { return inner_->num_kv_blocks(); }
  int32_t block_size() const override { return inner_->block_size(); }
  GroupStatus group_status() const override {
    absl::MutexLock lock(&mu_);
    return status_;
  }
  absl::Status Submit(const IterationPlan& plan) override { return inner_->Submit(plan); }
  absl::StatusOr<IterationResult> Wait() override {
    {
      absl::MutexLock lock(&mu_);
      ++arrivals_;
      auto open = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return passes_ > 0; };
      mu_.Await(absl::Condition(&open));
      --passes_;
    }
    return inner_->Wait();
  }

  void Allow(int n) {
    absl::MutexLock lock(&mu_);
    passes_ += n;
  }
  // Waits until Wait() has been entered `n` times.
  bool AwaitArrivals(int n, absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    auto reached = [this, n]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return arrivals_ >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&reached), timeout);
  }
  void SetGroupStatus(const GroupStatus& s) {
    absl::MutexLock lock(&mu_);
    status_ = s;
  }

 private:
  std::unique_ptr<Executor> inner_;
  mutable absl::Mutex mu_;
  int passes_ ABSL_GUARDED_BY(mu_) = 0;
  int arrivals_ ABSL_GUARDED_BY(mu_) = 0;
  GroupStatus status_ ABSL_GUARDED_BY(mu_);
};

// The expected families and samples, in exposition order, for check_exposition.py.
class Expectation {
 public:
  void Family(const std::string& name, const std::string& type, const std::string& help) {
    json_["families"].push_back(
        {{"name", name}, {"type", type}, {"help", help}, {"samples", nlohmann::json::array()}});
  }
  void Sample(const std::string& name, Labels labels, double value) {
    labels["model_name"] = kModel;
    json_["families"].back()["samples"].push_back(
        {{"name", name}, {"labels", labels}, {"value", value}});
  }
  void Gauge(const std::string& name, const std::string& help, double value) {
    Family(name, "gauge", help);
    Sample(name, {}, value);
  }
  void Counter(const std::string& name, const std::string& help, double value) {
    Family(name, "counter", help);
    Sample(name, {}, value);
  }
  // A histogram's cumulative buckets, sum and count, computed from the definition.
  void Histogram(const std::string& name, const std::string& help, const BucketBoundaries& bounds,
                 const std::vector<double>& values) {
    Family(name, "histogram", help);
    for (size_t i = 0; i <= bounds.size(); ++i) {
      const bool inf = i == bounds.size();
      const auto n = std::count_if(values.begin(), values.end(),
                                   [&](double v) { return inf || v <= bounds[i]; });
      Sample(name + "_bucket", {{"le", inf ? "+Inf" : nlohmann::json(bounds[i]).dump()}},
             static_cast<double>(n));
    }
    Sample(name + "_sum", {}, std::accumulate(values.begin(), values.end(), 0.0));
    Sample(name + "_count", {}, static_cast<double>(values.size()));
  }
  const nlohmann::json& json() const { return json_; }

 private:
  nlohmann::json json_ = {{"families", nlohmann::json::array()}};
};

// What the test feeds through the observer callbacks, and what the gauges should read.
struct Fed {
  struct Iteration {
    double duration, overhead;
    int32_t batch_size, num_tokens, inflight;
  };
  struct Finish {
    FinishReason reason;
    int32_t prompt, completion;
    double e2e;
  };
  std::vector<Iteration> iterations;
  std::vector<std::pair<double, double>> first_tokens;  // ttft, queue
  std::vector<double> inter_token;
  std::vector<Finish> finished;
};

struct Gauges {
  EngineSnapshot snapshot;
  bool ready = true;
  GroupStatus group;
};

nlohmann::json Expected(const Fed& fed, const Gauges& g,
                        const std::optional<KvCacheInfo>& cache = std::nullopt) {
  const BucketBoundaries latency = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25, 0.5,
                                    0.75,  1.0,   2.5,  5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0};
  double prompt = 0;
  std::map<std::string, double> reasons = {{"stop", 0}, {"length", 0}, {"abort", 0}, {"error", 0}};
  std::vector<double> e2e, ttft, queue, it_tokens, it_duration, batch, overhead;
  for (const auto& f : fed.finished) {
    prompt += f.prompt;
    e2e.push_back(f.e2e);
    reasons[FinishReasonName(f.reason)] += 1;
  }
  for (const auto& [t, q] : fed.first_tokens) {
    ttft.push_back(t);
    queue.push_back(q);
  }
  for (const auto& i : fed.iterations) {
    it_duration.push_back(i.duration);
    overhead.push_back(i.overhead);
    batch.push_back(i.batch_size);
    it_tokens.push_back(i.num_tokens);
  }

  Expectation e;
  e.Gauge("orca_num_requests_running", "Requests in the running batch set.",
          g.snapshot.num_running);
  e.Gauge("orca_num_requests_waiting", "Requests waiting to be admitted.", g.snapshot.num_waiting);
  e.Gauge("orca_kv_cache_usage_perc", "Fraction of KV cache blocks in use (0 to 1).",
          g.snapshot.kv_cache_usage);
  e.Counter("orca_num_preemptions_total",
            "Requests preempted for KV cache space (recomputed later).",
            static_cast<double>(g.snapshot.num_preemptions));
  e.Counter("orca_prompt_tokens_total", "Prompt tokens of finished requests.", prompt);
  // Counted from the engine as tokens are sampled, not from finished requests.
  e.Counter("orca_generation_tokens_total", "Tokens generated, counted as they are produced.",
            static_cast<double>(g.snapshot.generated_tokens));
  e.Counter("orca_prefix_cache_hit_tokens_total", "Prompt tokens found in the prefix cache.",
            static_cast<double>(g.snapshot.prefix_cache_hit_tokens));
  e.Family("orca_request_success_total", "counter", "Finished requests by finish reason.");
  for (const char* r : {"stop", "length", "abort", "error"}) {
    e.Sample("orca_request_success_total", {{"finished_reason", r}}, reasons[r]);
  }
  e.Histogram("orca_time_to_first_token_seconds", "Time from arrival to the first token.", latency,
              ttft);
  e.Histogram("orca_inter_token_latency_seconds", "Time between consecutive tokens of a request.",
              latency, fed.inter_token);
  e.Histogram("orca_e2e_request_latency_seconds", "Time from arrival to the last token.", latency,
              e2e);
  e.Histogram("orca_request_queue_time_seconds",
              "Time from arrival to the first scheduled iteration.", latency, queue);
  e.Histogram("orca_iteration_tokens", "Tokens per iteration (prefill + decode).",
              ExponentialBuckets(1, 2, 14), it_tokens);
  e.Histogram("orca_iteration_duration_seconds", "Wall time of one iteration.", latency,
              it_duration);
  e.Histogram("orca_batch_size", "Sequences per iteration.", ExponentialBuckets(1, 2, 10), batch);
  e.Histogram(
      "orca_scheduler_overhead_seconds",
      "CPU time per iteration outside model execution (scheduling, detokenizing, streaming).",
      ExponentialBuckets(1e-6, 2, 24), overhead);
  // The observer is told the batches in flight counting the one that just completed; the
  // gauge shows that depth (P when a pipeline of P stages is full; it used to show one
  // less, always 0 in-process).
  e.Gauge("orca_pipeline_inflight_batches", "Batches in flight through the pipeline stages.",
          fed.iterations.empty() ? 0 : fed.iterations.back().inflight);
  e.Gauge("orca_group_ready", "1 when the serving group is complete and initialised.",
          g.ready ? 1 : 0);
  e.Gauge("orca_group_world_size", "Ranks of the serving group (pipeline x tensor).",
          g.group.world_size);
  e.Gauge("orca_group_ranks_joined", "Ranks connected to the scheduler's control plane now.",
          g.group.ranks_joined);
  e.Gauge("orca_group_generation", "Initialisations of the serving group so far (1 in-process).",
          static_cast<double>(g.group.generation));
  e.Counter("orca_group_breaks_total",
            "Times the serving group broke (a rank lost); its running requests failed with "
            "retriable errors.",
            static_cast<double>(g.group.breaks));
  // The endpoint picker's series (the Gateway API Inference Extension's model server
  // protocol), under vLLM's names, with the snapshot's values.
  e.Gauge("vllm:num_requests_running",
          "Requests in the running batch set (orca_num_requests_running).", g.snapshot.num_running);
  e.Gauge("vllm:num_requests_waiting",
          "Requests waiting to be admitted (orca_num_requests_waiting).", g.snapshot.num_waiting);
  e.Gauge("vllm:kv_cache_usage_perc",
          "Fraction of KV cache blocks in use, 0 to 1 (orca_kv_cache_usage_perc).",
          g.snapshot.kv_cache_usage);
  e.Gauge("vllm:gpu_cache_usage_perc",
          "Fraction of KV cache blocks in use, 0 to 1 (orca_kv_cache_usage_perc; the name older "
          "endpoint pickers read).",
          g.snapshot.kv_cache_usage);
  if (cache.has_value()) {
    e.Family("vllm:cache_config_info", "gauge",
             "Information of the KV cache configuration (value 1; the labels carry it).");
    e.Sample("vllm:cache_config_info",
             {{"block_size", std::to_string(cache->block_size)},
              {"num_gpu_blocks", std::to_string(cache->num_blocks)},
              {"cache_dtype", cache->dtype},
              {"enable_prefix_caching", cache->prefix_caching ? "True" : "False"},
              {"engine", "0"}},
             1);
  }
  return e.json();
}

// Runs check_exposition.py on `text`; returns its report, or fails the test.
void CheckWithPythonParser(const std::string& text, const nlohmann::json& expected) {
  orca::testing::TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  {
    std::ofstream(dir.file("metrics.txt"), std::ios::binary) << text;
    std::ofstream(dir.file("expected.json"), std::ios::binary) << expected.dump(2);
  }
  const std::string script =
      orca::testing::SourceDir() + "/tests/engine/metrics/check_exposition.py";
  std::string output;
  const int rc = orca::testing::RunCommand(std::string(kPython) + " " + script + " " +
                                               dir.file("metrics.txt") + " " +
                                               dir.file("expected.json") + " 2>&1",
                                           &output);
  EXPECT_EQ(rc, 0) << output << "\n--- exposition ---\n" << text;
}

// A real engine on stories260K whose iterations the test lets through one by one.
class GatedEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
    EngineOptions eo;
    eo.model.dir = dir;
    eo.device.threads = 1;
    eo.kv_cache.num_blocks = 64;
    eo.scheduler.max_batch_size = 1;  // one request runs, the others wait
    auto local = LocalExecutor::Create(
        LocalExecutorOptions{eo.model, eo.device, eo.kv_cache, eo.scheduler, nullptr});
    ASSERT_TRUE(local.ok()) << local.status();
    auto gated = std::make_unique<GatedExecutor>(std::move(*local));
    gate_ = gated.get();
    auto engine = Engine::Create(eo, std::move(gated));
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = std::move(*engine);
  }
  void TearDown() override {
    if (gate_ != nullptr) gate_->Allow(1 << 20);
    if (engine_) engine_->Stop();
  }

  // Queues three requests, lets exactly one iteration complete and holds the engine in
  // the next: one request runs, two wait, the first holds KV blocks.
  void HoldEngineAfterOneIteration() {
    for (int i = 0; i < 3; ++i) {
      GenerateParams p;
      p.prompt_tokens = engine_->tokenizer().Encode("Once upon a time", true);
      p.max_tokens = 64;
      p.ignore_eos = true;
      p.sampling.temperature = 0;
      ASSERT_TRUE(engine_->Submit(std::move(p)).ok());
    }
    gate_->Allow(1);
    engine_->Start();
    ASSERT_TRUE(gate_->AwaitArrivals(2, absl::Seconds(60))) << "the engine did not iterate";
  }

  std::unique_ptr<Engine> engine_;
  GatedExecutor* gate_ = nullptr;
};

class ServingMetricsTest : public GatedEngineTest {
 protected:
  void SetUp() override {
    if (orca::testing::RunCommand(std::string(kPython) +
                                  " -c 'import prometheus_client.parser' >/dev/null 2>&1") != 0) {
      if (orca::testing::InCi()) FAIL() << "python3-prometheus-client is missing in CI";
      GTEST_SKIP() << "python3-prometheus-client not installed; skipping";
    }
    GatedEngineTest::SetUp();
  }
};

// The value of the one sample of `name` in `text` (-1 when absent).
double SampleValue(const std::string& text, const std::string& name) {
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (!absl::StartsWith(line, name + "{")) continue;
    double v = -1;
    if (absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &v)) return v;
  }
  return -1;
}

// Issue 16: orca_generation_tokens_total moved only when a request completed, so a
// dashboard saw nothing during long generations. It counts tokens as they are sampled:
// after 6 iterations of a request of 64 tokens, still running, it reads 6.
TEST_F(GatedEngineTest, GenerationTokensCountWhileTheRequestRuns) {
  HoldEngineAfterOneIteration();  // 1 iteration done: the first token
  ServingMetrics m(kModel);
  EXPECT_EQ(SampleValue(m.Scrape(*engine_, true), "orca_generation_tokens_total"), 1);
  gate_->Allow(5);
  ASSERT_TRUE(gate_->AwaitArrivals(7, absl::Seconds(60)));  // 6 iterations done
  const std::string text = m.Scrape(*engine_, true);
  EXPECT_EQ(SampleValue(text, "orca_num_requests_running"), 1) << text;
  EXPECT_EQ(SampleValue(text, "orca_generation_tokens_total"), 6) << text;
  // A request that ends adds nothing more: its tokens were counted already.
  m.OnFinished(FinishReason::kLength, 4, 6, 0.1);
  EXPECT_EQ(SampleValue(m.Scrape(*engine_, true), "orca_generation_tokens_total"), 6);
}

TEST_F(ServingMetricsTest, ExposesFedObservationsAndEngineGaugesToThePrometheusParser) {
  HoldEngineAfterOneIteration();
  const KvCacheInfo cache{16, 64, "float32", true};
  ServingMetrics m(kModel, cache);
  Fed fed;
  // Values on bucket bounds (inclusive), between them, below the first and past the last.
  fed.iterations = {{0.0125, 0.000003, 3, 40, 1},
                    {0.1, 0.0002, 64, 8192, 1},
                    {200.0, 1e-7, 1, 1, 2},
                    {0.001, 5.0, 1000, 20000, 3}};
  fed.first_tokens = {{0.042, 0.0}, {0.5, 0.25}, {3.0, 2.5}};
  fed.inter_token = {0.011, 0.011, 0.02, 0.0009, 161.0};
  fed.finished = {{FinishReason::kStop, 5, 12, 0.8},
                  {FinishReason::kLength, 7, 16, 1.0},
                  {FinishReason::kLength, 120, 1, 0.06},
                  {FinishReason::kAbort, 3, 0, 0.004},
                  {FinishReason::kError, 9, 2, 12.5}};
  for (const auto& i : fed.iterations) {
    m.OnIteration(i.duration, i.overhead, i.batch_size, i.num_tokens, i.inflight);
  }
  for (const auto& [ttft, queue] : fed.first_tokens) m.OnFirstToken(ttft, queue);
  for (double itl : fed.inter_token) m.OnToken(itl);
  for (const auto& f : fed.finished) m.OnFinished(f.reason, f.prompt, f.completion, f.e2e);

  GroupStatus group;
  group.world_size = 4;
  group.ranks_joined = 3;
  group.generation = 2;
  group.breaks = 1;
  gate_->SetGroupStatus(group);

  Gauges g;
  g.snapshot = engine_->Snapshot();
  EXPECT_EQ(g.snapshot.num_running, 1);
  EXPECT_EQ(g.snapshot.num_waiting, 2);
  EXPECT_GT(g.snapshot.kv_cache_usage, 0.0);
  g.group = group;
  const std::string text = m.Scrape(*engine_, /*ready=*/true);

  // The names docs/serving.md lists, and model_name on every series.
  for (const char* name :
       {"orca_num_requests_running{", "orca_num_requests_waiting{", "orca_kv_cache_usage_perc{",
        "orca_request_success_total{finished_reason=\"length\",",
        "orca_time_to_first_token_seconds_bucket{", "orca_inter_token_latency_seconds_sum{",
        "orca_e2e_request_latency_seconds_count{", "orca_request_queue_time_seconds_bucket{",
        "orca_iteration_tokens_bucket{", "orca_iteration_duration_seconds_bucket{",
        "orca_batch_size_bucket{", "orca_scheduler_overhead_seconds_bucket{"}) {
    EXPECT_NE(text.find(std::string("\n") + name), std::string::npos) << name;
  }
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (line[0] == '#') continue;
    EXPECT_NE(line.find("model_name=\"stories260K\""), std::string::npos) << line;
  }
  CheckWithPythonParser(text, Expected(fed, g, cache));
}

TEST_F(ServingMetricsTest, ScrapeCountsGroupBreaksOnceAndFollowsReadiness) {
  HoldEngineAfterOneIteration();
  ServingMetrics m(kModel);
  Fed fed;
  fed.finished = {{FinishReason::kStop, 4, 4, 0.3}};
  m.OnFinished(FinishReason::kStop, 4, 4, 0.3);

  Gauges g;
  g.snapshot = engine_->Snapshot();
  g.group.breaks = 2;
  gate_->SetGroupStatus(g.group);
  m.Scrape(*engine_, true);
  // Scraping again with no new break must not count the old ones twice; a new break
  // adds one; readiness follows the argument.
  CheckWithPythonParser(m.Scrape(*engine_, true), Expected(fed, g));
  g.group.breaks = 3;
  g.group.world_size = 2;
  g.group.ranks_joined = 1;
  g.group.generation = 3;
  g.ready = false;
  gate_->SetGroupStatus(g.group);
  CheckWithPythonParser(m.Scrape(*engine_, false), Expected(fed, g));
}

// The values an endpoint picker reads on one page: each vLLM name and its orca_ twin.
struct PickerView {
  double running, vllm_running, waiting, vllm_waiting, kv, vllm_kv, vllm_gpu_kv;
};
PickerView ReadPickerView(const std::string& text) {
  return {SampleValue(text, "orca_num_requests_running"),
          SampleValue(text, "vllm:num_requests_running"),
          SampleValue(text, "orca_num_requests_waiting"),
          SampleValue(text, "vllm:num_requests_waiting"),
          SampleValue(text, "orca_kv_cache_usage_perc"),
          SampleValue(text, "vllm:kv_cache_usage_perc"),
          SampleValue(text, "vllm:gpu_cache_usage_perc")};
}

// Issue 15: an EPP routes on vllm:num_requests_waiting, vllm:num_requests_running and
// vllm:kv_cache_usage_perc (older ones on vllm:gpu_cache_usage_perc). At every step of
// a real engine they equal orca's series and the engine's own snapshot.
TEST_F(GatedEngineTest, VllmSeriesEqualOrcaSeriesAndTheSnapshotAtEveryStep) {
  HoldEngineAfterOneIteration();
  ServingMetrics m(kModel);
  std::vector<double> kv_seen;
  for (int step = 0; step < 24; ++step) {             // past a block boundary
    const EngineSnapshot snap = engine_->Snapshot();  // stable: the engine is held
    const std::string text = m.Scrape(*engine_, true);
    const PickerView v = ReadPickerView(text);
    EXPECT_EQ(v.running, snap.num_running) << text;
    EXPECT_EQ(v.vllm_running, snap.num_running) << text;
    EXPECT_EQ(v.waiting, snap.num_waiting) << text;
    EXPECT_EQ(v.vllm_waiting, snap.num_waiting) << text;
    EXPECT_EQ(v.kv, snap.kv_cache_usage) << text;
    EXPECT_EQ(v.vllm_kv, snap.kv_cache_usage) << text;
    EXPECT_EQ(v.vllm_gpu_kv, snap.kv_cache_usage) << text;
    EXPECT_GT(v.vllm_kv, 0.0);
    EXPECT_LE(v.vllm_kv, 1.0);
    kv_seen.push_back(v.vllm_kv);
    // Without a cache configuration there is no info gauge.
    EXPECT_EQ(text.find("vllm:cache_config_info"), std::string::npos);
    gate_->Allow(1);
    ASSERT_TRUE(gate_->AwaitArrivals(step + 3, absl::Seconds(60)));
  }
  // The cache fills as the request generates: the series moved, they are not constants.
  EXPECT_GT(kv_seen.back(), kv_seen.front());
}

// Scrapes from several threads while the engine runs freely: every page shows one
// snapshot under both names (a scrape never mixes its values with another's).
TEST_F(GatedEngineTest, ConcurrentScrapesShowOneSnapshotUnderBothNames) {
  for (int i = 0; i < 12; ++i) {
    GenerateParams p;
    p.prompt_tokens = engine_->tokenizer().Encode("Once upon a time", true);
    p.max_tokens = 200;
    p.ignore_eos = true;
    ASSERT_TRUE(engine_->Submit(std::move(p)).ok());
  }
  gate_->Allow(1 << 20);
  engine_->Start();
  ServingMetrics m(kModel, KvCacheInfo{16, 64, "float32", true});
  std::atomic<int> mismatches{0};
  std::atomic<int> busy_pages{0};
  std::vector<std::thread> scrapers;
  for (int t = 0; t < 4; ++t) {
    scrapers.emplace_back([&] {
      for (int i = 0; i < 300; ++i) {
        const PickerView v = ReadPickerView(m.Scrape(*engine_, true));
        if (v.running != v.vllm_running || v.waiting != v.vllm_waiting || v.kv != v.vllm_kv ||
            v.kv != v.vllm_gpu_kv) {
          ++mismatches;
        }
        if (v.vllm_waiting > 0) ++busy_pages;
      }
    });
  }
  for (auto& t : scrapers) t.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_GT(busy_pages.load(), 0) << "no page saw the engine under load";
}

}  // namespace
}  // namespace orca
