// Scoring prompt tokens (OpenAI `echo` + `logprobs`, vLLM's `prompt_logprobs`): what
// the model thought of each prompt token given the ones before it, from the raw logits
// of the row before it. Pure functions on the host; thread-safe.
#pragma once

#include <cstdint>

#include "absl/types/span.h"
#include "engine/runner/iteration.h"

namespace orca {

// Scores `target` under one row of raw logits: its log-softmax value (computed in double
// from the row's maximum), its rank (1 + the number of logits strictly greater) and the
// `top_n` most likely tokens with their logprobs (larger logit first, then smaller id).
// A NaN logit counts as -inf (never ranked, never in the top N); a row with no finite
// logit scores everything -inf. `target` must index `logits`.
PromptLogprob ScorePromptToken(absl::Span<const float> logits, int32_t target, int32_t top_n);

}  // namespace orca
