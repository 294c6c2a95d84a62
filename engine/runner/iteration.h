// The plain data exchanged between the scheduler and the execution engine for one
// iteration (DESIGN.md sections 2-4). No tensors: token ids, positions, block tables
// and sampling parameters only, so a plan can be sent to remote workers as is (a
// deferred token mask, below, is made into its allowed_token_mask when sent).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "engine/common/trace.h"

namespace orca {

struct SamplingParams {
  float temperature = 1.0f;         // 0 = greedy
  int32_t top_k = 0;                // 0 = off
  float top_p = 1.0f;               // 1 = off
  float min_p = 0.0f;               // 0 = off
  float repetition_penalty = 1.0f;  // 1 = off (Hugging Face / CTRL rule, prompt + output)
  float presence_penalty = 0.0f;    // OpenAI: subtracted once per token present in the output
  float frequency_penalty = 0.0f;   // OpenAI: subtracted per occurrence in the output
  std::vector<std::pair<int32_t, float>> logit_bias;  // OpenAI logit_bias, added first
  uint64_t seed = 0;      // every request has one (drawn when not given)
  int32_t logprobs = -1;  // -1: none; 0: the chosen token's; N: also the top N
  // Prompt logprobs (OpenAI `echo` with `logprobs`, vLLM's `prompt_logprobs`): -1 none;
  // 0: each prompt token's logprob and rank under the model; N: also the top N. From
  // the raw logits (no temperature, penalties or bias), as vLLM and OpenAI report them.
  int32_t prompt_logprobs = -1;

  bool operator==(const SamplingParams&) const = default;
  bool greedy() const { return temperature < 1e-5f; }
  bool needs_history() const {
    return repetition_penalty != 1.0f || presence_penalty != 0.0f || frequency_penalty != 0.0f;
  }
};

// A guided sequence's token mask left for the rank that samples to make: the
// scheduler knows the guide and its state, and the mask (a walk of the vocabulary, or
// masks kept per grammar stack top; engine/guided/) is made after the forward pass is
// started, so that on a GPU its CPU work runs while the device computes the logits
// (ModelRunner::Execute). Make() is thread-safe and returns what allowed_token_mask
// would hold (stop tokens included where the output already matches).
class DeferredTokenMask {
 public:
  virtual ~DeferredTokenMask() = default;
  virtual std::vector<uint32_t> Make() const = 0;
};

// One sequence's share of an iteration: `token_ids` are its next uncomputed tokens
// (a prefill chunk, or the one newest token when decoding) at positions start_pos ..
// start_pos + token_ids.size() - 1. `block_table` covers at least the end position.
struct ScheduledSequence {
  uint64_t seq_id = 0;
  std::vector<int32_t> token_ids;
  int32_t start_pos = 0;
  std::vector<int32_t> block_table;
  // Sample a next token after this chunk (the prompt is complete, or decoding).
  bool sample = false;
  SamplingParams sampling;
  // The index of the token being sampled among the outputs (seeds the random stream).
  int32_t output_index = 0;
  // Every token of the sequence so far (prompt, then output); filled only when a
  // penalty needs it (SamplingParams::needs_history).
  std::vector<int32_t> penalty_history;
  int32_t penalty_prompt_len = 0;  // the first this-many of penalty_history are prompt
  // Tokens that must not be sampled (EOS while min_tokens is not reached).
  std::vector<int32_t> banned_token_ids;
  // Prompt logprobs wanted from this chunk (sampling.prompt_logprobs >= 0): row
  // prompt_logprobs_from + i (0-based within token_ids) predicts prompt token
  // prompt_logprob_targets[i], the one at position start_pos + prompt_logprobs_from + i
  // + 1. Empty: none (the rows before were scored by earlier plans, or the rest are the
  // outputs a recomputed sequence replays).
  int32_t prompt_logprobs_from = 0;
  std::vector<int32_t> prompt_logprob_targets;
  // Guided decoding (engine/guided/): the tokens that may be sampled, as bits (token t
  // when allowed_token_mask[t / 32] >> (t % 32) & 1; ids past the mask never); empty:
  // every token. A mask that allows nothing (after the bans) makes the sampler draw no
  // token: SampledToken::token_id -1 (the guide cannot go on; the request fails).
  std::vector<uint32_t> allowed_token_mask;
  // Set, in place of allowed_token_mask, by a scheduler in the same process as the
  // plan's executor; never sent: whoever samples or encodes the plan makes it first
  // (MakeDeferredMasks, engine/runner/deferred_masks.h).
  std::shared_ptr<const DeferredTokenMask> deferred_mask;

  bool operator==(const ScheduledSequence&) const = default;
};

struct IterationPlan {
  uint64_t iteration = 0;
  std::vector<ScheduledSequence> seqs;
  // Sequences finished or preempted since the previous plan (the scheduler's): a
  // group's ranks drop what they hold for them (engine/group/plan_codec.h). Executors
  // that hold nothing per sequence ignore it.
  std::vector<uint64_t> released_seq_ids;

  bool operator==(const IterationPlan&) const = default;

  int64_t num_tokens() const {
    int64_t n = 0;
    for (const auto& s : seqs) n += static_cast<int64_t>(s.token_ids.size());
    return n;
  }
};

struct SampledToken {
  uint64_t seq_id = 0;
  int32_t token_id = -1;  // -1: none (the row's token mask allowed nothing)
  float logprob = 0.0f;   // when logprobs >= 0
  std::vector<std::pair<int32_t, float>> top_logprobs;  // when logprobs > 0
};

// One prompt token as the model scores it: its logprob given the tokens before it, its
// rank among the vocabulary (1 = the most likely; ties share the better rank) and, when
// asked, the top N (token, logprob) pairs, most likely first.
struct PromptLogprob {
  int32_t token_id = -1;
  float logprob = 0.0f;
  int32_t rank = 0;
  std::vector<std::pair<int32_t, float>> top_logprobs;

  bool operator==(const PromptLogprob&) const = default;
};

// The prompt logprobs one plan's chunk of a sequence produced: those of the prompt
// tokens at positions first_position, first_position + 1, ... (position 0 has none).
struct SequencePromptLogprobs {
  uint64_t seq_id = 0;
  int32_t first_position = 0;
  std::vector<PromptLogprob> entries;

  bool operator==(const SequencePromptLogprobs&) const = default;
};

struct IterationResult {
  uint64_t iteration = 0;
  std::vector<SampledToken> tokens;  // one per ScheduledSequence with sample = true, in order
  // One per ScheduledSequence with prompt_logprob_targets, in plan order.
  std::vector<SequencePromptLogprobs> prompt_logprobs;
  // The rank's timed steps of this iteration, when its runner traces (ModelRunner::
  // set_tracing; engine/common/trace.h); empty otherwise.
  std::vector<TraceSpan> spans;
};

}  // namespace orca
