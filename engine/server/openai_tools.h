// Tool calling on /v1/chat/completions: parsing and validation of `tools`,
// `tool_choice` and `parallel_tool_calls`, and of the tool-call parts of chat history
// (assistant `tool_calls`, `tool` messages). Pure functions; errors are InvalidArgument
// with the field as kParamPayload, as in openai_request.h.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"

namespace orca {

struct OpenAiRequest;

// At most this many tools per request.
inline constexpr size_t kMaxTools = 128;

// Reads `tools`, `tool_choice` and `parallel_tool_calls` of a chat body into `r`
// (r.tools, r.tool_choice, r.tool_choice_name, r.parallel_tool_calls). A choice that
// forces a call ("required", a named function) becomes r's guided pattern, from the
// function's parameters (ToolListSchema for "required"); a parameters schema the guide
// cannot enforce is refused naming the tool, and so is a forced choice together with
// another guide (response_format, guided_*). Call after the guided fields are read.
absl::Status ParseTools(const nlohmann::ordered_json& body, OpenAiRequest& r);

// Checks the tool-call fields of chat message `msg` (at `where`, e.g. "messages[2]")
// and rewrites assistant `tool_calls[].function.arguments` from JSON text to the object
// it holds, as chat templates expect (they write it with `tojson`); an object is kept.
absl::Status NormalizeToolMessage(nlohmann::ordered_json& msg, const std::string& where);

}  // namespace orca
