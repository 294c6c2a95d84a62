// Engine: the serving core for one model. It owns the iteration-level scheduler, the
// KV block pool, the executor and the output processor, and runs the loop schedule ->
// execute -> update on its own thread (Step(); DESIGN.md section 2): every iteration's
// tokens go to the OutputProcessor, which detokenizes, checks stop strings and pushes
// the new text to each request's RequestStream at once. Submit() and Abort() are
// thread-safe and never block on model execution.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "engine/common/trace.h"
#include "engine/config/engine_config.h"
#include "engine/core/executor.h"
#include "engine/core/output_processor.h"
#include "engine/core/request_stream.h"
#include "engine/guided/token_guide.h"
#include "engine/sched/request_limits.h"
#include "engine/sched/scheduler.h"
#include "engine/tokenizer/tokenizer.h"

namespace orca {

// The engine's parts of EngineConfig (engine/config), taken by value.
struct EngineOptions {
  ModelOptions model;  // dir (tokenizer, and the in-process model), max_model_len, dtype
  SchedulerOptions scheduler;
  // The in-process executor's (ignored when Create is given an executor).
  DeviceOptions device;
  KvCacheOptions kv_cache;
  // Where the per-iteration trace goes (server.trace_file; null = off): the engine's
  // steps on the scheduler's track; the in-process executor's rank on its own.
  std::shared_ptr<TraceWriter> trace;

  // Returns the engine's parts of `config` (not the trace: the caller opens the file).
  static EngineOptions From(const EngineConfig& config) {
    return EngineOptions{config.model, config.scheduler, config.device, config.kv_cache, nullptr};
  }
};

struct GenerateParams {
  std::vector<int32_t> prompt_tokens;
  SamplingParams sampling;       // sampling.seed is set by Submit from `seed`
  std::optional<uint64_t> seed;  // reproducible sampling; unset: Submit draws one
  int32_t max_tokens = 16;
  int32_t min_tokens = 0;
  std::vector<int32_t> stop_token_ids;  // besides EOS
  bool ignore_eos = false;
  std::vector<std::string> stop;  // stop strings
  bool include_stop_str_in_output = false;
  bool skip_special_tokens = true;
  // Guided decoding: the output must match this (Engine::Guide compiles it).
  std::shared_ptr<const TokenGuide> guide;
};

struct EngineSnapshot {
  int32_t num_running = 0;
  int32_t num_waiting = 0;
  double kv_cache_usage = 0;
  int32_t kv_cache_blocks = 0;  // the block pool's size (a group's, once adopted)
  int64_t num_preemptions = 0;
  int64_t prefix_cache_hit_tokens = 0;
  int64_t iterations = 0;
  int64_t generated_tokens = 0;  // sampled so far, by every request, finished or not
};

class Engine {
 public:
  // Runs plans on `executor` (a serving group), or in-process on a LocalExecutor built
  // from `options` when it is null. The tokenizer is read from options.model_dir.
  static absl::StatusOr<std::unique_ptr<Engine>> Create(
      const EngineOptions& options, std::unique_ptr<Executor> executor = nullptr);
  ~Engine();

  // Starts the iteration thread.
  void Start();
  // Stops the thread; unfinished requests get an abort event.
  void Stop();

  // Validates and queues a request. Fails with InvalidArgument when it could never be
  // scheduled (bad tokens, over the context or the KV cache, or, without chunked
  // prefill, a prompt over max_batched_tokens) or ResourceExhausted (waiting queue
  // full: max_waiting_requests wait beyond the free slots of the batch). The stream
  // receives every event; a request still waiting for admission
  // options.scheduler.queue_timeout_s after Submit fails with Unavailable (retriable,
  // HTTP 503 with Retry-After; 0 = no deadline).
  absl::StatusOr<std::shared_ptr<RequestStream>> Submit(GenerateParams params);
  // Aborts a request (client gone); its blocks are freed at the next iteration.
  void Abort(uint64_t request_id);

  const Tokenizer& tokenizer() const { return *tokenizer_; }
  // The guide of `pattern` (a regular expression or a GBNF grammar the output must
  // match) over this model's vocabulary, compiled once and cached; InvalidArgument
  // naming what the compiler refuses. Thread-safe (the vocabulary's trie is built on
  // first use).
  absl::StatusOr<std::shared_ptr<const TokenGuide>> Guide(const std::string& pattern,
                                                          GuideSyntax syntax = GuideSyntax::kRegex);
  const ModelConfig& model_config() const { return executor_->config(); }
  // Whether the executor can run plans (a serving group is complete). Thread-safe.
  bool ready() const { return executor_->ready(); }
  GroupStatus group_status() const { return executor_->group_status(); }
  // The KV cache each rank holds, fixed at creation (the metrics' cache_config_info).
  int32_t num_kv_blocks() const { return executor_->num_kv_blocks(); }
  int32_t kv_block_size() const { return executor_->block_size(); }
  int32_t max_model_len() const { return scheduler_config_.max_model_len; }
  EngineSnapshot Snapshot() const;
  // Sets the metrics observer (call before Start).
  void SetObserver(EngineObserver* observer) {
    observer_ = observer;
    absl::MutexLock lock(&mu_);
    outputs_->set_observer(observer);
  }

 private:
  Engine() = default;
  absl::Mutex guides_mu_;
  std::unique_ptr<GuideCache> guides_ ABSL_GUARDED_BY(guides_mu_);
  // The engine thread: Step() until stopped.
  void Loop();
  // One step of the core loop, schedule -> execute -> update (vLLM's EngineCore.step):
  // take in new requests and aborts; then either schedule a batch and submit its plan
  // to the executor (up to one per pipeline stage in flight), or, when nothing more can
  // be scheduled, complete the oldest plan in flight and apply its tokens. Returns false
  // once the engine is stopping.
  bool Step();
  // Moves submitted requests and aborts into the scheduler (waiting briefly when idle)
  // and fails the running requests if the group lost their KV cache. False: stopping.
  bool TakeNewWork() ABSL_LOCKS_EXCLUDED(mu_);
  // Schedules the next batch and submits its plan; false when none can run now.
  bool ScheduleAndSubmit() ABSL_LOCKS_EXCLUDED(mu_);
  // Nothing in flight and nothing schedulable: waits a little (for an abort to free
  // blocks, or new work).
  void WaitForCapacity() ABSL_LOCKS_EXCLUDED(mu_);
  void DrainInbox() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Fails (Unavailable) the requests never admitted whose queue deadline has passed.
  void ExpireQueued(double now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Hands the requests the scheduler finished to the output processor; when no request
  // runs any more, a static batch is over and its held responses go out.
  void RetireFinished(double now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Applies the oldest in-flight batch's result (or failure) from the executor.
  // `submit_error`: Submit failed, so there is no result to wait for.
  void CompleteOldest(const absl::Status& submit_error) ABSL_LOCKS_EXCLUDED(mu_);
  void LogCostModel();
  // The executor's group has sized the KV cache by its ranks' memory: the pool takes
  // that count (before the first plan; see Executor).
  void AdoptKvCacheSize();
  // The serving group broke: every running request lost its KV cache and fails with
  // `error` (Unavailable: retriable); cached prefixes are forgotten.
  void FailRunning(const absl::Status& error) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UpdateSnapshot() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  EngineOptions options_;
  SchedulerConfig scheduler_config_;  // options_.scheduler with the derived limits
  RequestLimits limits_;              // what Submit accepts; fixed after Create
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<KvBlockPool> pool_;
  std::unique_ptr<IterationScheduler> scheduler_;  // engine thread only
  bool kv_size_adopted_ = false;                   // engine thread only (AdoptKvCacheSize)
  EngineObserver* observer_ = nullptr;
  // Batches submitted to the executor, oldest first (engine thread only).
  struct InFlight {
    ScheduledBatch batch;
    double scheduled = 0, submitted = 0;
  };
  std::deque<InFlight> inflight_;
  // Requests handed to the scheduler and maybe not admitted yet, with their arrival
  // times, in arrival order (engine thread only; see ExpireQueued).
  std::deque<std::pair<uint64_t, double>> queued_;
  uint64_t next_plan_ = 0;
  int64_t iterations_ = 0;
  int64_t generated_tokens_ = 0;    // engine thread only; published in snapshot_
  bool cost_model_logged_ = false;  // engine thread only

  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<Request>> inbox_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> aborts_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<OutputProcessor> outputs_ ABSL_GUARDED_BY(mu_);
  EngineSnapshot snapshot_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::thread thread_;
};

}  // namespace orca
