#include "engine/server/openai_tools.h"

#include <set>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "engine/chat/tool_calls.h"
#include "engine/common/status_macros.h"
#include "engine/guided/json_schema.h"
#include "engine/server/openai_request.h"

namespace orca {
namespace {

using json = nlohmann::ordered_json;

absl::Status Invalid(const std::string& param, const std::string& message) {
  absl::Status s = absl::InvalidArgumentError(message);
  s.SetPayload(kParamPayload, absl::Cord(param));
  return s;
}

// OpenAI's rule for function names.
bool ValidName(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  for (char c : n) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  }
  return true;
}

// The schema a forced call's arguments follow: the function's parameters, or an empty
// object for a function that takes none.
json ParametersOf(const json& fn) {
  auto p = fn.find("parameters");
  return p != fn.end() ? *p : json{{"type", "object"}, {"properties", json::object()}};
}

absl::Status ParseToolList(const json& tools, OpenAiRequest& r) {
  if (!tools.is_array()) return Invalid("tools", "'tools' must be an array");
  if (tools.size() > kMaxTools) {
    return Invalid("tools", absl::StrCat("at most ", kMaxTools, " tools per request"));
  }
  std::set<std::string> names;
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string where = absl::StrCat("tools[", i, "]");
    const json& t = tools[i];
    if (!t.is_object() || !t.contains("type") || t["type"] != "function") {
      return Invalid(where, absl::StrCat("'", where, "' must be an object of type 'function'"));
    }
    const json* fn = t.contains("function") ? &t["function"] : nullptr;
    if (fn == nullptr || !fn->is_object()) {
      return Invalid(where + ".function", absl::StrCat("'", where, ".function' must be an object"));
    }
    auto name = fn->find("name");
    if (name == fn->end() || !name->is_string() || !ValidName(name->get<std::string>())) {
      return Invalid(
          where + ".function.name",
          absl::StrCat("'", where, ".function.name' must be 1 to 64 letters, digits, '_' or '-'"));
    }
    if (!names.insert(name->get<std::string>()).second) {
      return Invalid(where + ".function.name",
                     absl::StrCat("two tools are named '", name->get<std::string>(), "'"));
    }
    if (auto d = fn->find("description"); d != fn->end() && !d->is_string() && !d->is_null()) {
      return Invalid(where + ".function.description",
                     absl::StrCat("'", where, ".function.description' must be a string"));
    }
    if (auto p = fn->find("parameters"); p != fn->end() && !p->is_object()) {
      return Invalid(
          where + ".function.parameters",
          absl::StrCat("'", where, ".function.parameters' must be a JSON schema object"));
    }
    if (auto s = fn->find("strict"); s != fn->end() && !s->is_boolean() && !s->is_null()) {
      return Invalid(where + ".function.strict",
                     absl::StrCat("'", where, ".function.strict' must be a boolean"));
    }
  }
  r.tools = tools;
  return absl::OkStatus();
}

absl::Status ParseChoice(const json& choice, OpenAiRequest& r) {
  if (choice.is_string()) {
    const std::string c = choice.get<std::string>();
    if (c == "none") {
      r.tool_choice = ToolChoice::kNone;
    } else if (c == "auto") {
      r.tool_choice = ToolChoice::kAuto;
    } else if (c == "required") {
      r.tool_choice = ToolChoice::kRequired;
    } else {
      return Invalid("tool_choice", absl::StrCat("'tool_choice' is '", c,
                                                 "'; expected none, auto, required or an object"));
    }
    return absl::OkStatus();
  }
  const json* name = nullptr;
  if (choice.is_object() && choice.contains("function") && choice["function"].is_object()) {
    name = choice["function"].contains("name") ? &choice["function"]["name"] : nullptr;
  }
  if (name == nullptr || !name->is_string()) {
    return Invalid("tool_choice",
                   "'tool_choice' must be none, auto, required or {\"type\": \"function\", "
                   "\"function\": {\"name\": ...}}");
  }
  r.tool_choice = ToolChoice::kNamed;
  r.tool_choice_name = name->get<std::string>();
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseTools(const json& body, OpenAiRequest& r) {
  auto get = [&](const char* key) -> const json* {
    auto it = body.find(key);
    return it == body.end() || it->is_null() ? nullptr : &*it;
  };
  if (const json* p = get("parallel_tool_calls")) {
    if (!p->is_boolean())
      return Invalid("parallel_tool_calls", "'parallel_tool_calls' must be a boolean");
    r.parallel_tool_calls = p->get<bool>();
  }
  const json* tools = get("tools");
  if (tools != nullptr) ORCA_RETURN_IF_ERROR(ParseToolList(*tools, r));
  const bool have_tools = !r.tools.empty();
  r.tool_choice = have_tools ? ToolChoice::kAuto : ToolChoice::kNone;
  if (const json* choice = get("tool_choice")) {
    ORCA_RETURN_IF_ERROR(ParseChoice(*choice, r));
    if (!have_tools && r.tool_choice != ToolChoice::kNone) {
      return Invalid("tool_choice", "'tool_choice' is only allowed when 'tools' are given");
    }
  }
  if (r.tool_choice != ToolChoice::kNamed && r.tool_choice != ToolChoice::kRequired) {
    return absl::OkStatus();
  }
  // A forced call: the guide makes the output the arguments (named) or a list of calls.
  if (!r.guided_pattern.empty()) {
    return Invalid("tool_choice", absl::StrCat("'tool_choice' that forces a call cannot be "
                                               "combined with '",
                                               r.guided_param, "'"));
  }
  const json* named = nullptr;
  for (size_t i = 0; i < r.tools.size(); ++i) {
    const json& fn = r.tools[i]["function"];
    if (r.tool_choice == ToolChoice::kNamed && fn["name"] != r.tool_choice_name) continue;
    named = &fn;
    absl::StatusOr<GuideSpec> guide = JsonSchemaToGuide(ParametersOf(fn));
    if (!guide.ok()) {
      const std::string where = absl::StrCat("tools[", i, "].function.parameters");
      return Invalid(where, absl::StrCat("'", where, "' cannot be enforced for 'tool_choice': ",
                                         guide.status().message()));
    }
    r.guided_pattern = std::move(guide->pattern);
    r.guided_syntax = guide->syntax;
  }
  if (named == nullptr) {
    return Invalid("tool_choice", absl::StrCat("'tool_choice' names '", r.tool_choice_name,
                                               "', which is not among 'tools'"));
  }
  if (r.tool_choice == ToolChoice::kRequired) {
    absl::StatusOr<GuideSpec> guide =
        JsonSchemaToGuide(ToolListSchema(r.tools, r.parallel_tool_calls));
    if (!guide.ok()) return Invalid("tools", std::string(guide.status().message()));
    r.guided_pattern = std::move(guide->pattern);
    r.guided_syntax = guide->syntax;
  }
  r.guided_param = "tool_choice";
  return absl::OkStatus();
}

absl::Status NormalizeToolMessage(json& msg, const std::string& where) {
  const std::string role = msg["role"].get<std::string>();
  if (auto id = msg.find("tool_call_id"); id != msg.end() && !id->is_string()) {
    return Invalid(where + ".tool_call_id",
                   absl::StrCat("'", where, ".tool_call_id' must be a string"));
  }
  auto calls = msg.find("tool_calls");
  if (calls == msg.end() || calls->is_null()) return absl::OkStatus();
  if (role != "assistant") {
    return Invalid(where + ".tool_calls",
                   absl::StrCat("'", where, ".tool_calls' is only allowed on assistant messages"));
  }
  if (!calls->is_array()) {
    return Invalid(where + ".tool_calls",
                   absl::StrCat("'", where, ".tool_calls' must be an array"));
  }
  for (size_t k = 0; k < calls->size(); ++k) {
    const std::string at = absl::StrCat(where, ".tool_calls[", k, "]");
    json& call = (*calls)[k];
    json* fn = call.is_object() && call.contains("function") ? &call["function"] : nullptr;
    if (fn == nullptr || !fn->is_object() || !fn->contains("name") || !(*fn)["name"].is_string()) {
      return Invalid(at, absl::StrCat("'", at, "' must have a function with a name"));
    }
    if (auto id = call.find("id"); id != call.end() && !id->is_string()) {
      return Invalid(at + ".id", absl::StrCat("'", at, ".id' must be a string"));
    }
    auto args = fn->find("arguments");
    if (args != fn->end() && args->is_object()) continue;  // already an object: kept
    if (args == fn->end() || !args->is_string()) {
      return Invalid(at + ".function.arguments",
                     absl::StrCat("'", at, ".function.arguments' must be a string of JSON"));
    }
    const std::string& text = args->get_ref<const std::string&>();
    if (JsonNestsDeeperThan(text, kMaxToolJsonDepth)) {
      return Invalid(at + ".function.arguments",
                     absl::StrCat("'", at, ".function.arguments' nests more than ",
                                  kMaxToolJsonDepth, " levels deep"));
    }
    json parsed = json::parse(text, nullptr, false);
    if (parsed.is_discarded()) {
      return Invalid(at + ".function.arguments",
                     absl::StrCat("'", at, ".function.arguments' is not valid JSON"));
    }
    *args = std::move(parsed);
  }
  return absl::OkStatus();
}

}  // namespace orca
