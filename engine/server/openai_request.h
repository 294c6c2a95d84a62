// Parsing and validation of OpenAI-compatible request bodies (/v1/completions and
// /v1/chat/completions). Every malformed or out-of-range field yields InvalidArgument
// with a message naming the field; the field name also travels as the Status payload
// kParamPayload so the HTTP edge can fill the error's "param". Unknown fields are
// ignored, as the OpenAI-compatible servers of the field do. Pure functions.
//
// Bodies parse to nlohmann::ordered_json: objects keep the client's key order (a repeated
// key keeps its first place and its last value, as Python's json.loads does), so chat
// templates see messages and chat_template_kwargs as transformers does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "engine/core/engine.h"

namespace orca {

inline constexpr char kParamPayload[] = "orca.dev/param";
// The deepest nesting of arrays and objects a request body may have (the top-level object
// is level 1). Deeper bodies are refused while parsing, before they cost memory.
inline constexpr int kMaxJsonDepth = 128;

// tool_choice: none (also with no tools), auto (the model decides; its output is parsed
// for calls), required (at least one call, forced), a named function (forced).
enum class ToolChoice { kNone, kAuto, kRequired, kNamed };

struct ChatMessageInput {
  std::string role;
  nlohmann::ordered_json message;  // the whole message object, content flattened to a string
};

struct OpenAiRequest {
  bool chat = false;
  std::string model;
  // Completions: one entry per prompt (text or token ids). Chat: messages instead.
  std::vector<std::string> prompt_texts;         // "" for token-id prompts
  std::vector<std::vector<int32_t>> prompt_ids;  // filled for token-id prompts
  nlohmann::ordered_json messages;               // chat: validated array
  bool add_generation_prompt = true;
  nlohmann::ordered_json chat_template_kwargs;  // extra template variables
  // Tool calling (chat; openai_tools.h): the validated `tools` (empty: none), the choice
  // and whether several calls may come at once. Forced choices set guided_pattern.
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();
  ToolChoice tool_choice = ToolChoice::kNone;
  std::string tool_choice_name;  // kNamed
  bool parallel_tool_calls = true;

  GenerateParams params;  // max_tokens may be unset (-1) for chat: fill at tokenize
  bool max_tokens_given = false;
  int32_t n = 1;
  bool stream = false;
  bool include_usage = false;
  bool echo = false;
  int32_t logprobs = -1;  // completions: N; chat: top_logprobs when logprobs=true
  // vLLM's extra field: each prompt token's logprob, rank and top N, returned as the
  // choice's `prompt_logprobs`. (Completions' `echo` with `logprobs` scores the prompt
  // too, returned inside `logprobs`: EffectivePromptLogprobs.)
  int32_t prompt_logprobs = -1;
  // Guided decoding: the pattern the output must match (`guided_regex`, `guided_choice`
  // or a JSON schema turned into one, or a `guided_grammar`), how it is written, and the
  // field it came from; empty: none.
  std::string guided_pattern;
  GuideSyntax guided_syntax = GuideSyntax::kRegex;
  std::string guided_param;
  std::optional<uint64_t> seed;
};

// Parses a request body. `chat` selects the chat schema. A body that is not JSON, or
// nests deeper than kMaxJsonDepth, is InvalidArgument. Checks JSON types and shapes
// here, then the values with ValidateOpenAiRequest.
absl::StatusOr<OpenAiRequest> ParseOpenAiRequest(const std::string& body, bool chat);

// Checks the values of a typed request, whichever transport filled it (the HTTP body
// parser, the gRPC adapter): sampling ranges, max/min tokens, logprobs, stop strings and
// token ids, n. InvalidArgument naming the field (payload kParamPayload).
absl::Status ValidateOpenAiRequest(const OpenAiRequest& r);

// The prompt logprobs the engine computes for `r` (SamplingParams::prompt_logprobs):
// the larger of `prompt_logprobs` and, for completions with `echo`, `logprobs`.
int32_t EffectivePromptLogprobs(const OpenAiRequest& r);

// Parses /tokenize and /detokenize bodies.
struct TokenizeRequest {
  std::string model;
  std::string prompt;
  nlohmann::ordered_json messages;                                 // chat form
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();  // chat form: rendered too
  bool add_special_tokens = true;
  bool add_generation_prompt = true;
};
absl::StatusOr<TokenizeRequest> ParseTokenizeRequest(const std::string& body);
absl::StatusOr<std::vector<int32_t>> ParseDetokenizeRequest(const std::string& body,
                                                            std::string* model);

}  // namespace orca
