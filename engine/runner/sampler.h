// Sampler: picks the next token of one sequence from its logits on the host.
// Deterministic: the random draw is a pure function of (seed, output_index), so a
// request sampled with a seed is reproducible and a preempted request that is
// recomputed samples the same tokens. Stateless and thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "engine/backend/backend.h"
#include "engine/runner/iteration.h"

namespace orca {

// Samples from `logits` (vocab entries; modified in place by penalties and filters).
SampledToken SampleToken(absl::Span<float> logits, const ScheduledSequence& seq);

// Returns a uniform double in [0, 1) derived from (seed, index) by SplitMix64.
double SeededUniform(uint64_t seed, uint64_t index);

// Whether a backend that samples as `caps` says (Backend::Sampling) draws `seq`'s next
// token (and its logprobs) as SampleToken would, over a vocabulary of `vocab` tokens:
// the backend takes logit edits if the row has any (HasLogitEdits; a guided-decoding
// mask and bans travel as a token mask, BackendSampleMask), the row wants at most
// caps.max_logprobs top logprobs (-1: none), and it is greedy, truncates nothing, or
// keeps a top_k of at most caps.max_top_k (top-p or min-p without a top-k count as a
// top_k of `vocab`).
bool SamplesOnBackend(const ScheduledSequence& seq, const SamplingCaps& caps, int32_t vocab);

// Whether `p` changes the logits before the draw: logit bias or a penalty.
inline bool HasLogitEdits(const SamplingParams& p) {
  return !p.logit_bias.empty() || p.needs_history();
}

// Appends `seq`'s logit edits (its logit bias, presence/frequency penalties on the
// output's tokens and repetition penalty on the whole history), one per token, in token
// order, to `edits`. SampleToken applies exactly these (ApplyLogitEdit), and so does
// Backend::SampleRows.
void AppendLogitEdits(const ScheduledSequence& seq, int32_t vocab, std::vector<LogitEdit>* edits);

// Applies `e` to the (sanitised) logit `x`, with the row's repetition penalty.
inline void ApplyLogitEdit(const LogitEdit& e, float repetition_penalty, float& x) {
  if (e.ops & LogitEdit::kBias) x += e.bias;
  if (e.ops & LogitEdit::kSubtract) x -= e.subtract;
  if (e.ops & LogitEdit::kRepeat) x = x > 0 ? x / repetition_penalty : x * repetition_penalty;
}

// The row parameters Backend::SampleRows draws `seq`'s next token with (mask_row is
// left at -1 for the caller to set).
SampleRowParams BackendSampleParams(const ScheduledSequence& seq);

// Whether `seq` needs a token mask on the backend (a guided-decoding mask or bans).
inline bool NeedsBackendMask(const ScheduledSequence& seq) {
  return !seq.allowed_token_mask.empty() || !seq.banned_token_ids.empty();
}

// Whether `seq` has a token mask that allows no token of a `vocab`-token vocabulary
// once its bans are applied: the row draws nothing (SampledToken::token_id -1).
bool AllowsNoToken(const ScheduledSequence& seq, int32_t vocab);

// Appends `seq`'s token mask for Backend::SampleRows to `masks`: ceil(vocab / 32)
// words allowing what SampleToken allows (the guide's mask, or every token, less the
// banned ones).
void AppendBackendSampleMask(const ScheduledSequence& seq, int32_t vocab,
                             std::vector<uint32_t>* masks);

}  // namespace orca
