#include "engine/server/openai_response.h"

#include <cmath>

namespace orca {
namespace {

using json = nlohmann::json;

json Logprob(float lp) { return std::isfinite(lp) ? json(lp) : json(-9999.0); }

std::string TokenText(const ResponseContext& ctx, int32_t id) {
  return ctx.tokenizer->Decode(std::vector<int32_t>{id}, /*skip_special_tokens=*/false);
}

json Bytes(const std::string& s) {
  json b = json::array();
  for (unsigned char ch : s) b.push_back(static_cast<int>(ch));
  return b;
}

json ToolCallDeltaJson(const ToolCallDelta& d) {
  json fn = json::object();
  if (!d.name.empty()) fn["name"] = d.name;
  fn["arguments"] = d.arguments;
  json out = {{"index", d.index}};
  if (!d.id.empty()) {
    out["id"] = d.id;
    out["type"] = "function";
  }
  out["function"] = std::move(fn);
  return out;
}

// The assistant message of a chat choice: its content, and the calls its parser found
// (content null when there are calls and no text besides, as OpenAI's).
json ChatMessageJson(const ChoiceState& c) {
  if (c.tools == nullptr) return {{"role", "assistant"}, {"content", c.text}};
  const std::vector<ToolCall>& calls = c.tools->calls();
  json msg = {{"role", "assistant"},
              {"content", calls.empty() || !c.tools->content().empty() ? json(c.tools->content())
                                                                       : json(nullptr)}};
  if (calls.empty()) return msg;
  json arr = json::array();
  for (const ToolCall& call : calls) {
    arr.push_back({{"id", call.id},
                   {"type", "function"},
                   {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
  }
  msg["tool_calls"] = std::move(arr);
  return msg;
}

}  // namespace

void ChoiceState::ParseTools(const std::string& new_text, bool at_end) {
  if (tools == nullptr) return;
  ParsedDelta d = tools->Feed(new_text);
  if (at_end) {
    ParsedDelta rest = tools->Finish();
    d.content += rest.content;
    d.calls.insert(d.calls.end(), rest.calls.begin(), rest.calls.end());
  }
  unsent.content += d.content;
  for (ToolCallDelta& call : d.calls) {
    // Arguments following their call's earlier part in the same chunk join it.
    if (!unsent.calls.empty() && unsent.calls.back().index == call.index && call.id.empty()) {
      unsent.calls.back().arguments += call.arguments;
    } else {
      unsent.calls.push_back(std::move(call));
    }
  }
}

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json FinishReasonJson(const ChoiceState& c) {
  if (!c.finished) return nullptr;
  if (c.finish_reason == FinishReason::kStop && c.tools != nullptr && !c.tools->calls().empty() &&
      !c.forced_function) {
    return "tool_calls";
  }
  switch (c.finish_reason) {
    case FinishReason::kLength:
      return "length";
    case FinishReason::kAbort:
      return "abort";
    case FinishReason::kError:
      return "error";
    default:
      return "stop";
  }
}

json LogprobsJson(const ResponseContext& ctx, const ChoiceState& c, size_t from, size_t to,
                  size_t text_offset) {
  if (ctx.logprobs < 0) return nullptr;
  to = std::min(to, c.samples.size());
  if (ctx.chat) {
    json content = json::array();
    for (size_t i = from; i < to; ++i) {
      const SampledToken& s = c.samples[i];
      std::string tok = TokenText(ctx, s.token_id);
      json top = json::array();
      for (const auto& [id, lp] : s.top_logprobs) {
        std::string t = TokenText(ctx, id);
        top.push_back({{"token", t}, {"logprob", Logprob(lp)}, {"bytes", Bytes(t)}});
      }
      content.push_back({{"token", tok},
                         {"logprob", Logprob(s.logprob)},
                         {"bytes", Bytes(tok)},
                         {"top_logprobs", top}});
    }
    return json{{"content", content}};
  }
  json tokens = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
  size_t offset = text_offset;
  for (size_t i = from; i < to; ++i) {
    const SampledToken& s = c.samples[i];
    std::string tok = TokenText(ctx, s.token_id);
    tokens.push_back(tok);
    lps.push_back(Logprob(s.logprob));
    json top = json::object();
    for (const auto& [id, lp] : s.top_logprobs) top[TokenText(ctx, id)] = Logprob(lp);
    if (ctx.logprobs > 0) top[tok] = Logprob(s.logprob);
    tops.push_back(ctx.logprobs > 0 ? top : json(nullptr));
    offsets.push_back(offset);
    offset += tok.size();
  }
  return json{{"tokens", tokens},
              {"token_logprobs", lps},
              {"top_logprobs", tops},
              {"text_offset", offsets}};
}

json PromptLogprobsJson(const ResponseContext& ctx, const ChoiceState& c) {
  if (ctx.prompt_logprobs < 0) return nullptr;
  json out = json::array();
  if (!c.prompt_token_ids.empty()) out.push_back(nullptr);
  for (const PromptLogprob& p : c.prompt_logprobs) {
    json entry = json::object();
    const size_t top = std::min(p.top_logprobs.size(), static_cast<size_t>(ctx.prompt_logprobs));
    for (size_t i = 0; i < top; ++i) {
      const auto& [id, lp] = p.top_logprobs[i];
      entry[std::to_string(id)] = {{"logprob", Logprob(lp)},
                                   {"rank", static_cast<int32_t>(i) + 1},
                                   {"decoded_token", TokenText(ctx, id)}};
    }
    entry[std::to_string(p.token_id)] = {{"logprob", Logprob(p.logprob)},
                                         {"rank", p.rank},
                                         {"decoded_token", TokenText(ctx, p.token_id)}};
    out.push_back(std::move(entry));
  }
  return out;
}

void AttachPromptScores(const ResponseContext& ctx, const ChoiceState& c, size_t to, json& choice) {
  if (ctx.prompt_logprobs >= 0) choice["prompt_logprobs"] = PromptLogprobsJson(ctx, c);
  if (!ctx.echo_logprobs) return;
  // The prompt's tokens first (the first has no logprob), then the generated ones, with
  // text offsets counted over the tokens' text from the start of the echoed prompt.
  json tokens = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
  size_t offset = 0;
  for (size_t i = 0; i < c.prompt_token_ids.size(); ++i) {
    const std::string tok = TokenText(ctx, c.prompt_token_ids[i]);
    tokens.push_back(tok);
    offsets.push_back(offset);
    offset += tok.size();
    const PromptLogprob* p =
        i > 0 && i - 1 < c.prompt_logprobs.size() ? &c.prompt_logprobs[i - 1] : nullptr;
    lps.push_back(p != nullptr ? Logprob(p->logprob) : json(nullptr));
    if (p == nullptr || ctx.logprobs == 0) {
      tops.push_back(nullptr);
      continue;
    }
    json top = json::object();
    const size_t n = std::min(p->top_logprobs.size(), static_cast<size_t>(ctx.logprobs));
    for (size_t k = 0; k < n; ++k)
      top[TokenText(ctx, p->top_logprobs[k].first)] = Logprob(p->top_logprobs[k].second);
    top[tok] = Logprob(p->logprob);
    tops.push_back(std::move(top));
  }
  const json generated = LogprobsJson(ctx, c, 0, to, offset);
  auto append = [&](json& into, const char* key) {
    for (const json& v : generated[key]) into.push_back(v);
  };
  append(tokens, "tokens");
  append(lps, "token_logprobs");
  append(tops, "top_logprobs");
  append(offsets, "text_offset");
  choice["logprobs"] = json{{"tokens", tokens},
                            {"token_logprobs", lps},
                            {"top_logprobs", tops},
                            {"text_offset", offsets}};
}

json UsageJson(const std::vector<ChoiceState>& choices) {
  // The n choices of one prompt share it: its tokens count once (OpenAI's usage).
  int64_t prompt = 0, completion = 0, cached = 0;
  for (const auto& c : choices) {
    completion += c.completion_tokens;
    if (c.counts_prompt) {
      prompt += c.prompt_tokens;
      cached += c.cached_prompt_tokens;
    }
  }
  return json{{"prompt_tokens", prompt},
              {"completion_tokens", completion},
              {"total_tokens", prompt + completion},
              {"prompt_tokens_details", {{"cached_tokens", cached}}}};
}

json FullResponse(const ResponseContext& ctx, const std::vector<ChoiceState>& choices,
                  const std::vector<std::string>& echo_prefix) {
  json arr = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceState& c = choices[i];
    std::string prefix = i < echo_prefix.size() ? echo_prefix[i] : "";
    if (ctx.chat) {
      arr.push_back({{"index", c.index},
                     {"message", ChatMessageJson(c)},
                     {"logprobs", LogprobsJson(ctx, c, 0, c.samples.size(), 0)},
                     {"finish_reason", FinishReasonJson(c)}});
    } else {
      arr.push_back({{"index", c.index},
                     {"text", prefix + c.text},
                     {"logprobs", LogprobsJson(ctx, c, 0, c.samples.size(), prefix.size())},
                     {"finish_reason", FinishReasonJson(c)}});
    }
    AttachPromptScores(ctx, c, c.samples.size(), arr.back());
  }
  return json{
      {"id", ctx.id},           {"object", ctx.chat ? "chat.completion" : "text_completion"},
      {"created", ctx.created}, {"model", ctx.model},
      {"choices", arr},         {"usage", UsageJson(choices)}};
}

json StreamChunk(const ResponseContext& ctx, const ChoiceState& c, const std::string& text,
                 size_t from, size_t to, bool first, bool with_finish) {
  json choice;
  if (ctx.chat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (c.tools != nullptr) {
      if (!c.unsent.content.empty() || (first && c.unsent.calls.empty())) {
        delta["content"] = c.unsent.content;
      }
      if (!c.unsent.calls.empty()) {
        json calls = json::array();
        for (const ToolCallDelta& d : c.unsent.calls) calls.push_back(ToolCallDeltaJson(d));
        delta["tool_calls"] = std::move(calls);
      }
    } else if (!text.empty() || first) {
      delta["content"] = text;
    }
    choice = {{"index", c.index},
              {"delta", delta},
              {"logprobs", LogprobsJson(ctx, c, from, to, 0)},
              {"finish_reason", with_finish ? FinishReasonJson(c) : json(nullptr)}};
  } else {
    choice = {{"index", c.index},
              {"text", text},
              {"logprobs", LogprobsJson(ctx, c, from, to, 0)},
              {"finish_reason", with_finish ? FinishReasonJson(c) : json(nullptr)}};
  }
  return json{{"id", ctx.id},
              {"object", ctx.chat ? "chat.completion.chunk" : "text_completion"},
              {"created", ctx.created},
              {"model", ctx.model},
              {"choices", json::array({choice})}};
}

json UsageChunk(const ResponseContext& ctx, const std::vector<ChoiceState>& choices) {
  return json{{"id", ctx.id},
              {"object", ctx.chat ? "chat.completion.chunk" : "text_completion"},
              {"created", ctx.created},
              {"model", ctx.model},
              {"choices", json::array()},
              {"usage", UsageJson(choices)}};
}

}  // namespace orca
