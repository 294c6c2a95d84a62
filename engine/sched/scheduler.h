// IterationScheduler: ORCA's iteration-level scheduler (DESIGN.md section 3), pure and
// model-free. Every call to Schedule() decides one iteration's batch anew from the
// request pool: FCFS by arrival, decodes first, then prefill chunks (chunked prefill)
// within max_batched_tokens and max_batch_size; finished requests leave and new ones
// join at every iteration. KV capacity is a separate policy: `reserve` (ORCA: admit
// only when prompt + max_tokens fit, never preempt) or `paged` (allocate as tokens
// arrive; when blocks run out, preempt the most recently admitted request and
// recompute it later, keeping its generated tokens), with optional prefix caching of
// full blocks. `request` scheduling reproduces request-level static batching as
// Triton + FasterTransformer run it: a batch is admitted only onto an idle engine,
// prefills together, then decodes in lockstep with a fixed shape (a finished member
// keeps its row, recomputing its last position, until the batch's longest member is
// done) and all its members finish together. `request-compact` is the same admission
// without the fixed shape: members decode as soon as their own prefill is done and
// leave the computation when they complete (their responses are still held).
//
// With a pipeline of P stages, P batches are in flight at once (max_inflight_batches):
// each batch holds at most max_batch_size sequences, up to P x max_batch_size requests
// run, and decodes are spread evenly over the batches (each takes at most its share of
// the running requests), so no stage idles under load. A request that finds no blocks
// waits for an in-flight batch to return rather than preempting itself.
//
// Not thread-safe: owned by the engine's iteration thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "engine/common/thread_pool.h"
#include "engine/config/engine_config.h"
#include "engine/kv/kv_block_pool.h"
#include "engine/runner/iteration.h"
#include "engine/sched/batch_budget.h"
#include "engine/sched/iteration_cost_model.h"
#include "engine/sched/kv_capacity.h"
#include "engine/sched/request.h"
#include "engine/sched/request_limits.h"

namespace orca {

// The configured options (engine/config) plus what the engine derives at start-up.
struct SchedulerConfig : SchedulerOptions {
  int32_t max_inflight_batches = 1;  // pipeline stages
  int32_t max_model_len = 2048;      // context length
  // Requests admitted at once: max_batch_size per in-flight batch, as ORCA's Algorithm 1
  // caps each batch and not their sum, so every stage of a pipeline has work. A
  // request-level (static) batch is one batch of at most max_batch_size.
  int32_t max_running() const {
    return IsRequestLevel(policy) ? max_batch_size
                                  : max_batch_size * std::max(1, max_inflight_batches);
  }
};

// Free KV blocks that admission leaves untouched, so that the running requests' next
// tokens do not at once preempt what was just admitted (vLLM's watermark): 1% of the
// pool, rounded down (none for pools under 100 blocks).
inline int32_t KvAdmissionWatermark(int32_t num_blocks) { return num_blocks / 100; }

// The plan of one iteration plus the bookkeeping Update() needs.
struct ScheduledBatch {
  IterationPlan plan;
  int32_t num_prefill_tokens = 0;
  int32_t num_decode_tokens = 0;
  bool empty() const { return plan.seqs.empty(); }
};

// What one iteration did to one request.
struct RequestUpdate {
  uint64_t request_id = 0;
  std::vector<int32_t> new_tokens;  // at most one per iteration
  std::vector<SampledToken> samples;
  // The prompt's next scored tokens (sampling.prompt_logprobs), continuing where the
  // previous update's left off; an update may carry these and no token.
  std::vector<PromptLogprob> prompt_logprobs;
  // The request is complete. Under `request` static batching it keeps its row and
  // stays running until its whole batch is complete; TakeFinished() returns it then.
  bool finished = false;
  FinishReason finish_reason = FinishReason::kNone;
  // With finish_reason kError: why, for the client (OK: an internal failure, reported
  // as "generation failed").
  absl::Status error;
};

class IterationScheduler {
 public:
  IterationScheduler(const SchedulerConfig& config, KvBlockPool* pool);

  // Validates (ValidateRequest against limits()) and enqueues `request`. Fails
  // (InvalidArgument) when it can never run: empty prompt, prompt + max_tokens over the
  // context, more KV blocks than exist, or (chunked prefill off) a prompt longer than
  // max_batched_tokens.
  absl::Status Add(std::unique_ptr<Request> request);
  // Returns what a request must fit to ever be scheduled (vocabulary unchecked); fixed
  // at construction, so the Engine checks the same limits at Submit.
  RequestLimits limits() const;
  // Finishes a request with kAbort at once, freeing its blocks, wherever it is. A
  // request in flight is finished when its batch returns. Returns false if unknown.
  bool Abort(uint64_t request_id);
  // Finishes a running request with `reason` (e.g. a stop string matched on text).
  bool Finish(uint64_t request_id, FinishReason reason);

  // Returns the next batch (empty when nothing can run now).
  ScheduledBatch Schedule();
  // Records that `batch` took `seconds` from Schedule() to its results being applied: the
  // iteration cost model the latency target (target_itl_ms) sizes prefill chunks with.
  void ObserveIteration(const ScheduledBatch& batch, double seconds);
  const IterationCostModel& cost_model() const { return cost_model_; }
  // Applies a batch's sampled tokens: appends them, checks stop tokens, max_tokens and
  // the context length, frees finished requests' blocks and returns one update per
  // request that sampled or finished.
  std::vector<RequestUpdate> Update(const ScheduledBatch& batch, const IterationResult& result);

  const Request* Find(uint64_t id) const;
  // Ids of the admitted requests (those holding KV blocks), in admission order.
  std::vector<uint64_t> RunningIds() const;
  int32_t num_waiting() const { return static_cast<int32_t>(waiting_.size()); }
  int32_t num_running() const { return static_cast<int32_t>(running_.size()); }
  int32_t num_inflight_batches() const { return inflight_batches_; }
  int64_t num_preemptions() const { return num_preemptions_; }
  int64_t num_prefix_cache_hit_tokens() const { return prefix_hit_tokens_; }
  bool has_work() const { return !waiting_.empty() || !running_.empty(); }
  const SchedulerConfig& config() const { return config_; }
  const KvBlockPool& pool() const { return *pool_; }

  // Removes and returns finished requests (their outputs stay readable).
  std::vector<std::unique_ptr<Request>> TakeFinished();

 private:
  BatchBudget MakeBudget() const;
  bool ScheduleRunning(Request& r, bool decode_pass, ScheduledBatch& batch, BatchBudget& budget);
  bool Admit(Request& r, ScheduledBatch& batch, BatchBudget& budget);
  void AddToBatch(Request& r, int32_t n, ScheduledBatch& batch);
  bool EnsureBlocks(Request& r, int32_t tokens, const ScheduledBatch& batch);
  void Preempt(Request& victim);
  void MatchPrefix(Request& r);
  void RegisterFullBlocks(Request& r);
  void FinishRequest(Request& r, FinishReason reason);
  // Completes `r` by stop or length: at once, or under fixed-shape static batching
  // held until the whole batch is complete.
  void Complete(Request& r, FinishReason reason);
  void EndStaticBatchIfComplete();
  void AddRowOfCompleted(Request& r, ScheduledBatch& batch);
  void ReleaseIfIdle(Request& r);
  Request* Get(uint64_t id);
  // The guided rows' next states after `result`'s tokens, by the row's place in
  // batch.plan.seqs (kNotAdvanced for rows without one), computed at once on
  // guide_pool_: a grammar's step costs microseconds a token, which rows advanced one
  // after another inside Update would add to every iteration (the GPU's, of a millisecond
  // or two, most of all). Rows whose request finished or whose token is a stop token are
  // advanced too and their states not used (a step changes nothing but the guide's
  // memo of states).
  static constexpr int32_t kNotAdvanced = -2;
  std::vector<int32_t> AdvanceGuides(const ScheduledBatch& batch, const IterationResult& result);

  SchedulerConfig config_;
  KvBlockPool* pool_;
  KvCapacity capacity_;
  IterationCostModel cost_model_;
  std::map<uint64_t, std::unique_ptr<Request>> requests_;
  std::deque<Request*> waiting_;   // arrival order; preempted requests keep their place
  std::vector<Request*> running_;  // admission order
  std::vector<std::unique_ptr<Request>> finished_;
  // Advances guided rows in parallel (AdvanceGuides); made when a batch first has two.
  std::unique_ptr<ThreadPool> guide_pool_;
  // Finished or preempted since the last non-empty plan (IterationPlan::released_seq_ids).
  std::vector<uint64_t> released_;
  int64_t next_admit_order_ = 0;
  int32_t inflight_batches_ = 0;
  int64_t num_preemptions_ = 0;
  int64_t prefix_hit_tokens_ = 0;
};

}  // namespace orca
