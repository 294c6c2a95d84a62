// Fuzzes chat templates (engine/chat/chat_template.h), the Jinja2 programs a checkpoint
// ships in tokenizer_config.json: the input is parsed and, when it parses, rendered
// with a fixed conversation as the HTTP server builds it (messages with a system
// prompt, a tool call and its result, tools, BOS/EOS, add_generation_prompt).
//
// The contract checked besides "no crash, no hang": every failure is InvalidArgument,
// and output never exceeds the size the caller allows.

#include <cstddef>
#include <cstdint>

#include "engine/chat/chat_template.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

constexpr size_t kMaxOutput = 1 << 16;

const nlohmann::ordered_json& Conversation() {
  static const auto* context = new nlohmann::ordered_json(nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "You are a helpful assistant."},
      {"role": "user", "content": "What is the weather in Paris?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}]},
      {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"t\": 21}"},
      {"role": "assistant", "content": "It is 21 \u00b0C in Paris."},
      {"role": "user", "content": [{"type": "text", "text": "Thanks! And tomorrow?"}]}
    ],
    "tools": [{"type": "function", "function": {"name": "get_weather",
      "description": "Current weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
    "add_generation_prompt": true,
    "bos_token": "<s>",
    "eos_token": "</s>",
    "enable_thinking": false
  })"));
  return *context;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto tmpl = orca::ChatTemplate::Parse(orca::fuzz::AsString(data, size));
  if (!tmpl.ok()) {
    if (tmpl.status().code() != absl::StatusCode::kInvalidArgument) __builtin_trap();
    return 0;
  }
  auto text = (*tmpl)->Render(Conversation(), kMaxOutput);
  if (text.ok() ? text->size() > kMaxOutput
                : text.status().code() != absl::StatusCode::kInvalidArgument) {
    __builtin_trap();
  }
  return 0;
}
