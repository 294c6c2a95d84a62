// Builders of OpenAI-compatible response bodies and stream chunks for
// /v1/completions and /v1/chat/completions. Pure functions over plain data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/chat/tool_calls.h"
#include "engine/runner/iteration.h"
#include "engine/sched/request.h"
#include "engine/tokenizer/tokenizer.h"

namespace orca {

// Accumulated output of one choice.
struct ChoiceState {
  int32_t index = 0;
  std::string text;
  std::vector<int32_t> token_ids;
  std::vector<SampledToken> samples;
  bool finished = false;
  FinishReason finish_reason = FinishReason::kNone;
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
  int32_t cached_prompt_tokens = 0;
  bool counts_prompt = true;  // false for the 2nd..nth choice of a prompt
  // Prompt logprobs (ResponseContext::echo_logprobs / prompt_logprobs): the prompt's
  // token ids and the scores of positions 1, 2, ... as they come.
  std::vector<int32_t> prompt_token_ids;
  std::vector<PromptLogprob> prompt_logprobs;
  // Tool calling (chat with tools): the parser the output goes through (null: none),
  // what it returned that no stream chunk carried yet, and whether tool_choice named the
  // function (then finish_reason stays "stop", as OpenAI's does).
  std::shared_ptr<ToolCallParser> tools;
  ParsedDelta unsent;
  bool forced_function = false;
  // Feeds `text` (and with `finished` the end) to the parser, adding to `unsent`.
  void ParseTools(const std::string& text, bool finished);
  // Whether every prompt token that has a logprob (all but the first) has it.
  bool prompt_scored() const { return prompt_logprobs.size() + 1 >= prompt_token_ids.size(); }
};

struct ResponseContext {
  bool chat = false;
  std::string id;       // "cmpl-..." or "chatcmpl-..."
  int64_t created = 0;  // unix seconds
  std::string model;
  int32_t logprobs = -1;
  // Completions with `echo` and `logprobs`: the prompt's tokens lead `logprobs`.
  bool echo_logprobs = false;
  int32_t prompt_logprobs = -1;  // vLLM's field: the choice's `prompt_logprobs`, top N
  const Tokenizer* tokenizer = nullptr;

  bool wants_prompt_scores() const { return echo_logprobs || prompt_logprobs >= 0; }
};

// Returns the OpenAI finish_reason value for `r` (null while unfinished).
nlohmann::json FinishReasonJson(const ChoiceState& c);

// Logprobs object for tokens [from, to) of a choice, in the completions or chat shape.
nlohmann::json LogprobsJson(const ResponseContext& ctx, const ChoiceState& c, size_t from,
                            size_t to, size_t text_offset);

// vLLM's `prompt_logprobs` of a choice: null for the first prompt token, then per token
// {"<id>": {"logprob", "rank", "decoded_token"}} for it and the top N. Null when
// ctx.prompt_logprobs < 0.
nlohmann::json PromptLogprobsJson(const ResponseContext& ctx, const ChoiceState& c);

// Sets what a choice carries about its prompt: `prompt_logprobs` when asked, and with
// ctx.echo_logprobs its `logprobs` (completions shape) to the prompt tokens' followed by
// those of tokens [0, to) generated so far.
void AttachPromptScores(const ResponseContext& ctx, const ChoiceState& c, size_t to,
                        nlohmann::json& choice);

// The non-streamed response for all choices.
nlohmann::json FullResponse(const ResponseContext& ctx, const std::vector<ChoiceState>& choices,
                            const std::vector<std::string>& echo_prefix);
// One stream chunk carrying `text` (and tokens [from, to)) for choice `c`. A choice with
// a tool-call parser carries `c.unsent` instead of `text` (content and tool-call deltas;
// the caller clears it once the chunk is written).
nlohmann::json StreamChunk(const ResponseContext& ctx, const ChoiceState& c,
                           const std::string& text, size_t from, size_t to, bool first,
                           bool with_finish);
// The final usage-only chunk (stream_options.include_usage).
nlohmann::json UsageChunk(const ResponseContext& ctx, const std::vector<ChoiceState>& choices);
nlohmann::json UsageJson(const std::vector<ChoiceState>& choices);

// Serialises JSON for the wire, replacing invalid UTF-8 instead of failing.
std::string Dump(const nlohmann::json& j);

}  // namespace orca
