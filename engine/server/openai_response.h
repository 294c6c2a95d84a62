// Builders of OpenAI-compatible response bodies and stream chunks for
// /v1/completions and /v1/chat/completions. Pure functions over plain data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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
};

struct ResponseContext {
  bool chat = false;
  std::string id;       // "cmpl-..." or "chatcmpl-..."
  int64_t created = 0;  // unix seconds
  std::string model;
  int32_t logprobs = -1;
  const Tokenizer* tokenizer = nullptr;
};

// Returns the OpenAI finish_reason value for `r` (null while unfinished).
nlohmann::json FinishReasonJson(const ChoiceState& c);

// Logprobs object for tokens [from, to) of a choice, in the completions or chat shape.
nlohmann::json LogprobsJson(const ResponseContext& ctx, const ChoiceState& c, size_t from,
                            size_t to, size_t text_offset);

// The non-streamed response for all choices.
nlohmann::json FullResponse(const ResponseContext& ctx, const std::vector<ChoiceState>& choices,
                            const std::vector<std::string>& echo_prefix);
// One stream chunk carrying `text` (and tokens [from, to)) for choice `c`.
nlohmann::json StreamChunk(const ResponseContext& ctx, const ChoiceState& c,
                           const std::string& text, size_t from, size_t to, bool first,
                           bool with_finish);
// The final usage-only chunk (stream_options.include_usage).
nlohmann::json UsageChunk(const ResponseContext& ctx, const std::vector<ChoiceState>& choices);
nlohmann::json UsageJson(const std::vector<ChoiceState>& choices);

// Serialises JSON for the wire, replacing invalid UTF-8 instead of failing.
std::string Dump(const nlohmann::json& j);

}  // namespace orca
