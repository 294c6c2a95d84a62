#include "engine/server/serving_metrics.h"

namespace orca {

ServingMetrics::ServingMetrics(const std::string& model_name) {
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
  running_ = gauge("orca_num_requests_running", "Requests in the running batch set.");
  waiting_ = gauge("orca_num_requests_waiting", "Requests waiting to be admitted.");
  kv_usage_ = gauge("orca_kv_cache_usage_perc", "Fraction of KV cache blocks in use (0 to 1).");
  preemptions_ = counter("orca_num_preemptions_total",
                         "Requests preempted for KV cache space (recomputed later).");
  prompt_tokens_ = counter("orca_prompt_tokens_total", "Prompt tokens of finished requests.");
  generation_tokens_ =
      counter("orca_generation_tokens_total", "Tokens generated, counted as they are produced.");
  prefix_hits_ =
      counter("orca_prefix_cache_hit_tokens_total", "Prompt tokens found in the prefix cache.");
  success_ = &BuildCounter()
                  .Name("orca_request_success_total")
                  .Help("Finished requests by finish reason.")
                  .Labels(model)
                  .Register(registry_);
  for (const char* r : {"stop", "length", "abort", "error"})
    success_->Add({{"finished_reason", r}});
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
}

std::string ServingMetrics::Scrape(const Engine& engine, bool ready) {
  EngineSnapshot s = engine.Snapshot();
  running_->Set(s.num_running);
  waiting_->Set(s.num_waiting);
  kv_usage_->Set(s.kv_cache_usage);
  ready_->Set(ready ? 1 : 0);
  const GroupStatus g = engine.group_status();
  world_size_->Set(g.world_size);
  ranks_joined_->Set(g.ranks_joined);
  generation_->Set(static_cast<double>(g.generation));
  const uint64_t seen = seen_breaks_.exchange(g.breaks);
  if (g.breaks > seen) breaks_->Increment(static_cast<double>(g.breaks - seen));
  int64_t prev = seen_preemptions_.exchange(s.num_preemptions);
  if (s.num_preemptions > prev)
    preemptions_->Increment(static_cast<double>(s.num_preemptions - prev));
  prev = seen_generated_.exchange(s.generated_tokens);
  if (s.generated_tokens > prev)
    generation_tokens_->Increment(static_cast<double>(s.generated_tokens - prev));
  prev = seen_prefix_hits_.exchange(s.prefix_cache_hit_tokens);
  if (s.prefix_cache_hit_tokens > prev)
    prefix_hits_->Increment(static_cast<double>(s.prefix_cache_hit_tokens - prev));
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
  const char* r = reason == FinishReason::kLength  ? "length"
                  : reason == FinishReason::kAbort ? "abort"
                  : reason == FinishReason::kError ? "error"
                                                   : "stop";
  success_->Add({{"finished_reason", r}}).Increment();
}

}  // namespace orca
