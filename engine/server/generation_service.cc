#include "engine/server/generation_service.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"

namespace orca {
namespace {

absl::Status WithParam(absl::Status s, const char* param) {
  s.SetPayload(kParamPayload, absl::Cord(param));
  return s;
}

}  // namespace

absl::Status GenerationService::CheckModel(const std::string& model) const {
  if (!model.empty() && model != options_.served_model_name) {
    return WithParam(absl::NotFoundError(absl::StrCat("The model `", model, "` does not exist.")),
                     "model");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> GenerationService::RenderChat(
    const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
    bool add_generation_prompt, const nlohmann::ordered_json& kwargs) const {
  const Tokenizer& tok = engine_->tokenizer();
  // The context keeps the request's key order (ordered_json), as transformers does.
  nlohmann::ordered_json ctx = kwargs.is_object() ? kwargs : nlohmann::ordered_json::object();
  ctx["messages"] = messages;
  // Templates test `tools` for being defined / not none: only set when there are some.
  if (tools.is_array() && !tools.empty()) ctx["tools"] = tools;
  ctx["add_generation_prompt"] = add_generation_prompt;
  ctx["bos_token"] = tok.bos_id() ? tok.IdToToken(*tok.bos_id()) : "";
  ctx["eos_token"] = tok.eos_id() ? tok.IdToToken(*tok.eos_id()) : "";
  if (!options_.render_chat) {
    return WithParam(absl::InvalidArgumentError("chat requests are not served here"), "messages");
  }
  auto text = options_.render_chat(ctx);
  if (!text.ok()) {
    return WithParam(
        absl::InvalidArgumentError(absl::StrCat("chat template: ", text.status().message())),
        "messages");
  }
  return text;
}

absl::StatusOr<GenerationService::Started> GenerationService::Start(const OpenAiRequest& r) {
  ORCA_RETURN_IF_ERROR(CheckModel(r.model));
  if (draining()) {
    return absl::UnavailableError(
        "The server is shutting down; retry the request (on another replica).");
  }
  if (options_.ready && !options_.ready()) {
    return absl::UnavailableError("the serving group is not ready; retry shortly");
  }
  const Tokenizer& tok = engine_->tokenizer();
  std::vector<std::vector<int32_t>> prompts;
  Started started;
  ++*open_;
  started.open = std::shared_ptr<void>(nullptr, [open = open_](void*) { --*open; });
  if (r.chat) {
    ORCA_ASSIGN_OR_RETURN(std::string text, RenderChat(r.messages, r.tools, r.add_generation_prompt,
                                                       r.chat_template_kwargs));
    prompts.push_back(tok.Encode(text, /*add_special_tokens=*/false));
  } else {
    for (size_t i = 0; i < r.prompt_texts.size(); ++i) {
      if (r.prompt_ids[i].empty()) {
        prompts.push_back(tok.Encode(r.prompt_texts[i], /*add_special_tokens=*/true));
        started.echo_text.push_back(r.prompt_texts[i]);
      } else {
        prompts.push_back(r.prompt_ids[i]);
        started.echo_text.push_back(tok.Decode(r.prompt_ids[i], false));
      }
    }
  }
  started.prompt_ids = prompts;
  std::shared_ptr<const TokenGuide> guide;
  if (!r.guided_pattern.empty()) {
    absl::StatusOr<std::shared_ptr<const TokenGuide>> g =
        engine_->Guide(r.guided_pattern, r.guided_syntax);
    if (!g.ok()) return WithParam(g.status(), r.guided_param.c_str());
    guide = *std::move(g);
  }
  for (size_t p = 0; p < prompts.size(); ++p) {
    for (int32_t i = 0; i < r.n; ++i) {
      GenerateParams params = r.params;
      params.prompt_tokens = prompts[p];
      params.guide = guide;
      // The markers of some tool-call formats are special tokens: keep them for the parser.
      if (r.tool_choice == ToolChoice::kAuto && options_.tool_call_format != ToolCallFormat::kNone)
        params.skip_special_tokens = false;
      if (params.max_tokens < 0) {  // chat without max_tokens: up to the context
        params.max_tokens = engine_->max_model_len() - static_cast<int32_t>(prompts[p].size());
        if (params.max_tokens < 1) params.max_tokens = 1;  // Submit reports the context error
      }
      if (r.seed) params.seed = *r.seed + static_cast<uint64_t>(p * r.n + i);
      auto stream = engine_->Submit(std::move(params));
      if (!stream.ok()) {
        Abort(started);
        absl::Status s = stream.status();
        if (absl::IsInvalidArgument(s)) s = WithParam(s, r.chat ? "messages" : "prompt");
        return s;
      }
      started.streams.push_back(*std::move(stream));
    }
  }
  return started;
}

void GenerationService::Abort(const Started& started) {
  for (const auto& s : started.streams) engine_->Abort(s->id());
}

}  // namespace orca
