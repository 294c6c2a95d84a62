// ServingMetrics: the scheduler's Prometheus metrics (DESIGN.md section 7), named as
// vLLM's with the orca_ prefix, every series labelled with model_name. It observes the
// Engine (EngineObserver: called on the iteration thread) and refreshes gauges from an
// EngineSnapshot when scraped; the engine's running totals (preemptions, prefix-cache
// hits, generated tokens: counted as each token is sampled, not when its request ends)
// become counters there too.
//
// Beside orca's own series it exposes those a Gateway API Inference Extension endpoint
// picker (EPP) reads from a model server, under vLLM's names (the "model server
// protocol", docs/serving.md): vllm:num_requests_waiting, vllm:num_requests_running,
// vllm:kv_cache_usage_perc and its older name vllm:gpu_cache_usage_perc, each set from
// the same snapshot value as its orca_ twin in the same scrape, and the info gauge
// vllm:cache_config_info (value 1, the KV cache configuration as labels).
//
// Thread-safe. Scrapes are serialized among themselves (so one page shows one snapshot
// under both names). Under a lock the iteration thread also takes, a scrape only copies
// (the engine's snapshot, a histogram's buckets), and the observer callbacks take no
// lock a scrape holds while rendering, so scraping never stalls the engine loop.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "engine/core/engine.h"
#include "engine/metrics/metrics.h"

namespace orca {

// The KV cache's fixed configuration, exposed as vllm:cache_config_info. num_blocks 0: the
// engine's serving group sizes the cache when it first forms, and the gauge appears with
// the first scrape after that (Engine::num_kv_blocks).
struct KvCacheInfo {
  int32_t block_size = 0;  // tokens per block
  int32_t num_blocks = 0;  // blocks per rank: vLLM's num_gpu_blocks
  std::string dtype;       // element type of the cached keys and values, e.g. "float32"
  bool prefix_caching = false;
};

class ServingMetrics : public EngineObserver {
 public:
  // Registers every family for `model_name`. Without `cache`, vllm:cache_config_info is
  // left out (an EPP then does without the block size it reads from it).
  explicit ServingMetrics(const std::string& model_name,
                          const std::optional<KvCacheInfo>& cache = std::nullopt);

  // Returns the exposition text; refreshes the gauges from `engine` and `ready` first.
  std::string Scrape(const Engine& engine, bool ready) ABSL_LOCKS_EXCLUDED(scrape_mu_);

  void OnIteration(double duration_s, double scheduler_overhead_s, int32_t batch_size,
                   int32_t num_tokens, int32_t inflight) override;
  void OnFirstToken(double ttft_s, double queue_s) override;
  void OnToken(double inter_token_s) override;
  void OnFinished(FinishReason reason, int32_t prompt_tokens, int32_t completion_tokens,
                  double e2e_s) override;

 private:
  // Gauges that show one value under several names: orca's first, then vLLM's.
  using GaugeNames = std::vector<metrics::Gauge*>;
  static void SetAll(const GaugeNames& gauges, double value);
  // Registers vllm:cache_config_info with `num_blocks` (cache_ holds the rest).
  void RegisterCacheInfo(int32_t num_blocks) ABSL_EXCLUSIVE_LOCKS_REQUIRED(scrape_mu_);

  metrics::Registry registry_;
  GaugeNames running_;
  GaugeNames waiting_;
  GaugeNames kv_usage_;
  metrics::Counter* preemptions_;
  metrics::Counter* prompt_tokens_;
  metrics::Counter* generation_tokens_;
  metrics::Counter* prefix_hits_;
  // orca_request_success_total by finished_reason: stop, length, abort, error (looked
  // up once, so the iteration thread never takes the family's lock).
  metrics::Counter* finished_[4];
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

  absl::Mutex scrape_mu_;
  std::optional<KvCacheInfo> cache_;  // fixed in the constructor
  metrics::Labels model_labels_;      // fixed in the constructor
  bool cache_info_registered_ ABSL_GUARDED_BY(scrape_mu_) = false;
  uint64_t seen_breaks_ ABSL_GUARDED_BY(scrape_mu_) = 0;
  int64_t seen_preemptions_ ABSL_GUARDED_BY(scrape_mu_) = 0;
  int64_t seen_prefix_hits_ ABSL_GUARDED_BY(scrape_mu_) = 0;
  int64_t seen_generated_ ABSL_GUARDED_BY(scrape_mu_) = 0;
};

}  // namespace orca
