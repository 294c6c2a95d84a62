// Fuzzes the bodies of POST /v1/chat/completions (engine/server/openai_request.h) and
// what the server does next with an accepted one: the messages and chat_template_kwargs
// become the context of a real chat template (Qwen2.5's, which reads tools and tool
// calls), rendered as GenerationService::RenderChat does.
//
// The contract checked besides "no crash, no hang": a refused body or a failed render is
// InvalidArgument, and an accepted request passes ValidateOpenAiRequest.

#include <cstddef>
#include <cstdint>

#include "engine/chat/chat_template.h"
#include "engine/server/openai_request.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

const orca::ChatTemplate& Template() {
  static const orca::ChatTemplate* tmpl = [] {
    auto parsed = orca::ChatTemplate::Parse(orca::fuzz::ReadFileOrDie(
        orca::fuzz::SourcePath("tests/engine/chat/testdata/qwen25_instruct.jinja")));
    if (!parsed.ok()) __builtin_trap();
    return parsed->release();
  }();
  return *tmpl;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto request = orca::ParseOpenAiRequest(orca::fuzz::AsString(data, size), /*chat=*/true);
  if (!request.ok()) {
    if (request.status().code() != absl::StatusCode::kInvalidArgument) __builtin_trap();
    return 0;
  }
  if (!orca::ValidateOpenAiRequest(*request).ok()) __builtin_trap();
  // As GenerationService::RenderChat builds the context.
  nlohmann::ordered_json context = request->chat_template_kwargs.is_object()
                                       ? request->chat_template_kwargs
                                       : nlohmann::ordered_json::object();
  context["messages"] = request->messages;
  if (!request->tools.empty()) context["tools"] = request->tools;
  context["add_generation_prompt"] = request->add_generation_prompt;
  context["bos_token"] = "<s>";
  context["eos_token"] = "</s>";
  auto text = Template().Render(context, 1 << 16);
  if (!text.ok() && text.status().code() != absl::StatusCode::kInvalidArgument) __builtin_trap();
  return 0;
}
