#include "engine/server/serving_metrics.h"

#include "absl/strings/str_cat.h"

namespace orca {
namespace {

// The index into finished_ of a finish reason (kNone counts as stop, as before).
int FinishedIndex(FinishReason reason) {
  switch (reason) {
    case FinishReason::kLength:
      return 1;
    case FinishReason::kAbort:
      return 2;
    case FinishReason::kError:
      return 3;
    default:
      return 0;
  }
}

}  // namespace

ServingMetrics::ServingMetrics(const std::string& model_name,
                               const std::optional<KvCacheInfo>& cache) {
  using namespace metrics;  // NOLINT(build/namespaces): builder DSL
  const Labels model = {{"model_name", model_name}};
  auto gauge = [&](const char* name, const char* help) {
    return &BuildGauge().Name(name).Help(help).Labels(model).Register(registry_).Add({});
  };
  auto counter = [&](const char* name, const char* help) {
    return &BuildCounter().Name(name).Help(help).Labels(model).Register(registry_).Add({});
  };
  auto histogram = [&](const char* name, const char* help, BucketBoundaries buckets) {
    return &BuildHistogram().Name(name).Help(help).Labels(model).Register(registry_).Add(
        {}, std::move(buckets));
  };
  const BucketBoundaries latency = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25, 0.5,
                                    0.75,  1.0,   2.5,  5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0};
  running_ = {gauge("orca_num_requests_running", "Requests in the running batch set.")};
  waiting_ = {gauge("orca_num_requests_waiting", "Requests waiting to be admitted.")};
  kv_usage_ = {gauge("orca_kv_cache_usage_perc", "Fraction of KV cache blocks in use (0 to 1).")};
  preemptions_ = counter("orca_num_preemptions_total",
                         "Requests preempted for KV cache space (recomputed later).");
  prompt_tokens_ = counter("orca_prompt_tokens_total", "Prompt tokens of finished requests.");
  generation_tokens_ =
      counter("orca_generation_tokens_total", "Tokens generated, counted as they are produced.");
  prefix_hits_ =
      counter("orca_prefix_cache_hit_tokens_total", "Prompt tokens found in the prefix cache.");
  Family<Counter>& success = BuildCounter()
                                 .Name("orca_request_success_total")
                                 .Help("Finished requests by finish reason.")
                                 .Labels(model)
                                 .Register(registry_);
  const char* const reasons[] = {"stop", "length", "abort", "error"};  // FinishedIndex order
  for (int i = 0; i < 4; ++i) finished_[i] = &success.Add({{"finished_reason", reasons[i]}});
  ttft_ = histogram("orca_time_to_first_token_seconds", "Time from arrival to the first token.",
                    latency);
  itl_ = histogram("orca_inter_token_latency_seconds",
                   "Time between consecutive tokens of a request.", latency);
  e2e_ = histogram("orca_e2e_request_latency_seconds", "Time from arrival to the last token.",
                   latency);
  queue_ = histogram("orca_request_queue_time_seconds",
                     "Time from arrival to the first scheduled iteration.", latency);
  iteration_tokens_ = histogram("orca_iteration_tokens", "Tokens per iteration (prefill + decode).",
                                ExponentialBuckets(1, 2, 14));
  iteration_duration_ =
      histogram("orca_iteration_duration_seconds", "Wall time of one iteration.", latency);
  batch_size_ =
      histogram("orca_batch_size", "Sequences per iteration.", ExponentialBuckets(1, 2, 10));
  overhead_ = histogram(
      "orca_scheduler_overhead_seconds",
      "CPU time per iteration outside model execution (scheduling, detokenizing, streaming).",
      ExponentialBuckets(1e-6, 2, 24));
  inflight_ =
      gauge("orca_pipeline_inflight_batches", "Batches in flight through the pipeline stages.");
  ready_ = gauge("orca_group_ready", "1 when the serving group is complete and initialised.");
  world_size_ = gauge("orca_group_world_size", "Ranks of the serving group (pipeline x tensor).");
  ranks_joined_ =
      gauge("orca_group_ranks_joined", "Ranks connected to the scheduler's control plane now.");
  generation_ =
      gauge("orca_group_generation", "Initialisations of the serving group so far (1 in-process).");
  breaks_ = counter("orca_group_breaks_total",
                    "Times the serving group broke (a rank lost); its running requests failed "
                    "with retriable errors.");

  // The model server protocol of the Gateway API Inference Extension: the series an
  // endpoint picker scrapes, under vLLM's names. Each is one more name for a value above
  // (SetAll), never a second count.
  running_.push_back(gauge("vllm:num_requests_running",
                           "Requests in the running batch set (orca_num_requests_running)."));
  waiting_.push_back(gauge("vllm:num_requests_waiting",
                           "Requests waiting to be admitted (orca_num_requests_waiting)."));
  kv_usage_.push_back(
      gauge("vllm:kv_cache_usage_perc",
            "Fraction of KV cache blocks in use, 0 to 1 (orca_kv_cache_usage_perc)."));
  kv_usage_.push_back(gauge("vllm:gpu_cache_usage_perc",
                            "Fraction of KV cache blocks in use, 0 to 1 (orca_kv_cache_usage_perc; "
                            "the name older endpoint pickers read)."));
  // A group sizing its cache by its ranks' memory knows the block count once it forms:
  // the info gauge appears with the first scrape after that.
  if (cache.has_value()) {
    cache_ = *cache;
    model_labels_ = model;
    absl::MutexLock lock(&scrape_mu_);
    if (cache->num_blocks > 0) RegisterCacheInfo(cache->num_blocks);
  }
}

void ServingMetrics::RegisterCacheInfo(int32_t num_blocks) {
  // An info gauge as vLLM exposes its CacheConfig: value 1, the configuration as labels
  // (an EPP reads block_size and num_gpu_blocks).
  metrics::BuildGauge()
      .Name("vllm:cache_config_info")
      .Help("Information of the KV cache configuration (value 1; the labels carry it).")
      .Labels(model_labels_)
      .Register(registry_)
      .Add({{"block_size", absl::StrCat(cache_->block_size)},
            {"num_gpu_blocks", absl::StrCat(num_blocks)},
            {"cache_dtype", cache_->dtype},
            {"enable_prefix_caching", cache_->prefix_caching ? "True" : "False"},
            {"engine", "0"}})
      .Set(1);
  cache_info_registered_ = true;
}

void ServingMetrics::SetAll(const GaugeNames& gauges, double value) {
  for (metrics::Gauge* g : gauges) g->Set(value);
}

std::string ServingMetrics::Scrape(const Engine& engine, bool ready) {
  absl::MutexLock lock(&scrape_mu_);
  if (cache_.has_value() && !cache_info_registered_ && engine.num_kv_blocks() > 0) {
    RegisterCacheInfo(engine.num_kv_blocks());
  }
  const EngineSnapshot s = engine.Snapshot();  // a copy under the engine's lock
  SetAll(running_, s.num_running);
  SetAll(waiting_, s.num_waiting);
  SetAll(kv_usage_, s.kv_cache_usage);
  ready_->Set(ready ? 1 : 0);
  const GroupStatus g = engine.group_status();
  world_size_->Set(g.world_size);
  ranks_joined_->Set(g.ranks_joined);
  generation_->Set(static_cast<double>(g.generation));
  // The engine's totals become counters by their growth since the last scrape.
  auto advance = [](auto total, auto& seen, metrics::Counter* counter) {
    if (total > seen) counter->Increment(static_cast<double>(total - seen));
    seen = total;
  };
  advance(g.breaks, seen_breaks_, breaks_);
  advance(s.num_preemptions, seen_preemptions_, preemptions_);
  advance(s.generated_tokens, seen_generated_, generation_tokens_);
  advance(s.prefix_cache_hit_tokens, seen_prefix_hits_, prefix_hits_);
  return registry_.Serialize();
}

void ServingMetrics::OnIteration(double duration_s, double scheduler_overhead_s, int32_t batch_size,
                                 int32_t num_tokens, int32_t inflight) {
  iteration_duration_->Observe(duration_s);
  overhead_->Observe(scheduler_overhead_s);
  batch_size_->Observe(batch_size);
  iteration_tokens_->Observe(num_tokens);
  inflight_->Set(inflight);  // the batches in the pipeline when this one completed
}

void ServingMetrics::OnFirstToken(double ttft_s, double queue_s) {
  ttft_->Observe(ttft_s);
  queue_->Observe(queue_s);
}

void ServingMetrics::OnToken(double inter_token_s) { itl_->Observe(inter_token_s); }

void ServingMetrics::OnFinished(FinishReason reason, int32_t prompt_tokens,
                                int32_t /*completion_tokens: counted as generated*/, double e2e_s) {
  prompt_tokens_->Increment(prompt_tokens);
  e2e_->Observe(e2e_s);
  finished_[FinishedIndex(reason)]->Increment();
}

}  // namespace orca
