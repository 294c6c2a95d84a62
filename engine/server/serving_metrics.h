// ServingMetrics: the scheduler's Prometheus metrics (DESIGN.md section 7), named as
// vLLM's with the orca_ prefix, every series labelled with model_name. It observes the
// Engine (EngineObserver: called on the iteration thread) and refreshes gauges from an
// EngineSnapshot when scraped; the engine's running totals (preemptions, prefix-cache
// hits, generated tokens: counted as each token is sampled, not when its request ends)
// become counters there too. Thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "engine/core/engine.h"
#include "engine/metrics/metrics.h"

namespace orca {

class ServingMetrics : public EngineObserver {
 public:
  explicit ServingMetrics(const std::string& model_name);

  // Returns the exposition text; refreshes the gauges from `engine` and `ready` first.
  std::string Scrape(const Engine& engine, bool ready);

  void OnIteration(double duration_s, double scheduler_overhead_s, int32_t batch_size,
                   int32_t num_tokens, int32_t inflight) override;
  void OnFirstToken(double ttft_s, double queue_s) override;
  void OnToken(double inter_token_s) override;
  void OnFinished(FinishReason reason, int32_t prompt_tokens, int32_t completion_tokens,
                  double e2e_s) override;

 private:
  metrics::Registry registry_;
  metrics::Gauge* running_;
  metrics::Gauge* waiting_;
  metrics::Gauge* kv_usage_;
  metrics::Counter* preemptions_;
  metrics::Counter* prompt_tokens_;
  metrics::Counter* generation_tokens_;
  metrics::Counter* prefix_hits_;
  metrics::Family<metrics::Counter>* success_;
  metrics::Histogram* ttft_;
  metrics::Histogram* itl_;
  metrics::Histogram* e2e_;
  metrics::Histogram* queue_;
  metrics::Histogram* iteration_tokens_;
  metrics::Histogram* iteration_duration_;
  metrics::Histogram* batch_size_;
  metrics::Histogram* overhead_;
  metrics::Gauge* inflight_;
  metrics::Gauge* ready_;
  metrics::Gauge* world_size_;
  metrics::Gauge* ranks_joined_;
  metrics::Gauge* generation_;
  metrics::Counter* breaks_;
  std::atomic<uint64_t> seen_breaks_{0};
  std::atomic<int64_t> seen_preemptions_{0};
  std::atomic<int64_t> seen_prefix_hits_{0};
  std::atomic<int64_t> seen_generated_{0};
};

}  // namespace orca
