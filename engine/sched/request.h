// Request: one generation request as the scheduler sees it — token ids, limits and
// scheduling state. Plain data; owned by the IterationScheduler once added.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/guided/token_guide.h"
#include "engine/kv/kv_block_pool.h"
#include "engine/runner/iteration.h"

namespace orca {

enum class RequestStatus { kWaiting, kRunning, kFinished };

enum class FinishReason { kNone, kStop, kLength, kAbort, kError };

// Returns the OpenAI spelling: "stop", "length", "abort", "error".
const char* FinishReasonName(FinishReason r);

struct Request {
  uint64_t id = 0;
  std::vector<int32_t> prompt_tokens;
  std::vector<int32_t> output_tokens;
  SamplingParams sampling;
  int32_t max_tokens = 16;              // new tokens at most
  int32_t min_tokens = 0;               // stop tokens are banned until this many are generated
  std::vector<int32_t> stop_token_ids;  // EOS ids (unless ignore_eos) and user stop ids
  double arrival_time = 0;              // seconds, any monotonic clock

  // Scheduling state.
  RequestStatus status = RequestStatus::kWaiting;
  FinishReason finish_reason = FinishReason::kNone;
  // Static batching: the request is complete but keeps its row (and blocks) until its
  // whole batch completes; it finishes with this reason then.
  FinishReason held_finish = FinishReason::kNone;
  int32_t num_computed_tokens = 0;       // tokens whose KV is in the cache
  int32_t num_cached_prompt_tokens = 0;  // of those, found in the prefix cache
  BlockTable blocks;
  int64_t admit_order = -1;  // admission counter; newest is preempted first
  int32_t num_preemptions = 0;
  int32_t in_flight = 0;     // batches containing this request not yet returned
  uint64_t prefix_hash = 0;  // chained hash of the registered full blocks
  int32_t num_registered_blocks = 0;
  double first_scheduled_time = -1;
  // Prompt logprobs (sampling.prompt_logprobs >= 0): the first prompt position whose
  // logprob has not come back yet (position 0 has none). Kept across preemption: the
  // recomputed prefill scores only what is still missing. While it is short of the
  // prompt's end, the request does not start from the prefix cache (cached rows would
  // never be scored).
  int32_t next_prompt_logprob = 1;
  // Guided decoding: the compiled pattern the output must match, and its state after the
  // output so far (kept across preemption: the outputs are replayed, not resampled).
  std::shared_ptr<const TokenGuide> guide;
  int32_t guide_state = 0;

  int32_t num_tokens() const {
    return static_cast<int32_t>(prompt_tokens.size() + output_tokens.size());
  }
  int32_t prompt_len() const { return static_cast<int32_t>(prompt_tokens.size()); }
  int32_t TokenAt(int32_t i) const {
    const int32_t p = static_cast<int32_t>(prompt_tokens.size());
    return i < p ? prompt_tokens[i] : output_tokens[i - p];
  }
  bool finished() const { return status == RequestStatus::kFinished; }
  bool wants_prompt_logprobs() const {
    return sampling.prompt_logprobs >= 0 && next_prompt_logprob < prompt_len();
  }
};

}  // namespace orca
