#include "engine/server/openai_request.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"
#include "engine/guided/byte_dfa.h"
#include "engine/guided/grammar_automaton.h"
#include "engine/guided/json_schema.h"
#include "engine/server/openai_tools.h"

namespace orca {
namespace {

using json = nlohmann::ordered_json;

constexpr int32_t kMaxN = 128;
constexpr int32_t kMaxStops = 16;
constexpr size_t kMaxStopLength = 256;
constexpr int32_t kMaxLogprobs = 20;
constexpr size_t kMaxGuidedBytes = 16384;
constexpr size_t kMaxGuidedChoices = 1024;
constexpr size_t kMaxPrompts = 64;

// Builds an ordered_json from SAX events in linear time. (ordered_json::parse finds each
// key by a linear scan of its object, quadratic for a body with many keys.) Objects keep
// their keys in document order; a repeated key keeps its first place and takes its last
// value, as with Python's json.loads and as nlohmann::json::parse takes the last value.
class OrderedJsonBuilder : public nlohmann::json_sax<json> {
 public:
  explicit OrderedJsonBuilder(json* root) : root_(root) {}
  // Whether the parse stopped at a container deeper than kMaxJsonDepth.
  bool too_deep() const { return too_deep_; }

  bool null() override { return Put(json(nullptr)); }
  bool boolean(bool v) override { return Put(json(v)); }
  bool number_integer(number_integer_t v) override { return Put(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return Put(json(v)); }
  bool number_float(number_float_t v, const string_t& /*text*/) override { return Put(json(v)); }
  bool string(string_t& v) override { return Put(json(std::move(v))); }
  bool binary(binary_t& v) override { return Put(json::binary(std::move(v))); }
  bool start_object(std::size_t /*size*/) override { return Open(json::object()); }
  bool key(string_t& k) override {
    Frame& f = stack_.back();
    json::object_t& obj = *f.value->get_ptr<json::object_t*>();
    auto [it, added] = f.index.try_emplace(k, obj.size());
    if (added) obj.emplace_back(std::move(k), nullptr);  // no lookup: `index` has it
    f.slot = it->second;
    return true;
  }
  bool end_object() override { return Close(); }
  bool start_array(std::size_t /*size*/) override { return Open(json::array()); }
  bool end_array() override { return Close(); }
  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& /*ex*/) override {
    return false;
  }

 private:
  struct Frame {
    json* value;                                    // the open object or array
    std::unordered_map<std::string, size_t> index;  // object: key -> position
    size_t slot = 0;                                // object: where the next value goes
  };

  // Stores `v` where the document puts it and returns its address. Only the innermost open
  // container grows, so the addresses of the open ones stay valid.
  json* Place(json v) {
    if (stack_.empty()) {
      *root_ = std::move(v);
      return root_;
    }
    Frame& f = stack_.back();
    if (f.value->is_array()) {
      json::array_t& arr = *f.value->get_ptr<json::array_t*>();
      arr.push_back(std::move(v));
      return &arr.back();
    }
    json& slot = (f.value->get_ptr<json::object_t*>()->begin() + f.slot)->second;
    slot = std::move(v);
    return &slot;
  }
  bool Put(json v) {
    Place(std::move(v));
    return true;
  }
  // Refuses to open a container deeper than kMaxJsonDepth: the parse stops there, before
  // the nesting costs memory (each open level holds a Frame and a json value).
  bool Open(json container) {
    if (stack_.size() >= static_cast<size_t>(kMaxJsonDepth)) {
      too_deep_ = true;
      return false;
    }
    stack_.push_back(Frame{Place(std::move(container)), {}, 0});
    return true;
  }
  bool Close() {
    stack_.pop_back();
    return true;
  }

  json* root_;
  std::vector<Frame> stack_;
  bool too_deep_ = false;
};

absl::Status Invalid(const std::string& param, const std::string& message) {
  absl::Status s = absl::InvalidArgumentError(message);
  s.SetPayload(kParamPayload, absl::Cord(param));
  return s;
}

// Parses `body` (strict JSON, like json::parse). InvalidArgument with `invalid` when it
// is not valid JSON, with a message naming the limit when it nests deeper than
// kMaxJsonDepth.
absl::StatusOr<json> ParseBody(const std::string& body,
                               const char* invalid = "the request body is not valid JSON") {
  json root;
  OrderedJsonBuilder builder(&root);
  if (json::sax_parse(body, &builder)) return root;
  if (builder.too_deep()) {
    return Invalid("", absl::StrCat("the request body nests arrays and objects more than ",
                                    kMaxJsonDepth, " levels deep"));
  }
  return Invalid("", invalid);
}

// Typed, range-checked access to optional fields of the request object. null means
// "not given", as in the OpenAI API.
class Fields {
 public:
  explicit Fields(const json& j) : j_(j) {}
  const json* Get(const char* name) const {
    auto it = j_.find(name);
    if (it == j_.end() || it->is_null()) return nullptr;
    return &*it;
  }
  absl::Status Bool(const char* name, bool* out) const {
    const json* v = Get(name);
    if (v == nullptr) return absl::OkStatus();
    if (!v->is_boolean()) return Invalid(name, absl::StrCat("'", name, "' must be a boolean"));
    *out = v->get<bool>();
    return absl::OkStatus();
  }
  absl::Status Int(const char* name, int64_t lo, int64_t hi, std::optional<int64_t>* out) const {
    const json* v = Get(name);
    if (v == nullptr) return absl::OkStatus();
    if (v->is_number_float()) {
      double d = v->get<double>();
      if (std::floor(d) != d) return Invalid(name, absl::StrCat("'", name, "' must be an integer"));
    } else if (!v->is_number_integer()) {
      return Invalid(name, absl::StrCat("'", name, "' must be an integer"));
    }
    double d = v->get<double>();
    if (d < static_cast<double>(lo) || d > static_cast<double>(hi)) {
      return Invalid(name, absl::StrCat("'", name, "' must be between ", lo, " and ", hi, ", got ",
                                        v->dump()));
    }
    *out = v->is_number_unsigned() ? static_cast<int64_t>(v->get<uint64_t>()) : v->get<int64_t>();
    return absl::OkStatus();
  }
  // A number (its range is ValidateOpenAiRequest's).
  absl::Status Number(const char* name, float* out) const {
    const json* v = Get(name);
    if (v == nullptr) return absl::OkStatus();
    if (!v->is_number()) return Invalid(name, absl::StrCat("'", name, "' must be a number"));
    *out = static_cast<float>(v->get<double>());
    return absl::OkStatus();
  }

 private:
  const json& j_;
};

// The ranges of the numeric sampling fields (OpenAI's where it has them). One table for
// every transport: ValidateOpenAiRequest checks a typed request against it.
struct FloatRange {
  const char* name;
  float SamplingParams::*field;
  double lo, hi;
  bool lo_open;  // (lo, hi] instead of [lo, hi]
};
constexpr FloatRange kFloatRanges[] = {
    {"temperature", &SamplingParams::temperature, 0, 2, false},
    {"top_p", &SamplingParams::top_p, 0, 1, true},
    {"min_p", &SamplingParams::min_p, 0, 1, false},
    {"repetition_penalty", &SamplingParams::repetition_penalty, 0, 2, true},
    {"presence_penalty", &SamplingParams::presence_penalty, -2, 2, false},
    {"frequency_penalty", &SamplingParams::frequency_penalty, -2, 2, false},
};

absl::Status CheckInt(const char* name, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi) {
    return Invalid(name,
                   absl::StrCat("'", name, "' must be between ", lo, " and ", hi, ", got ", v));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int32_t>> TokenIds(const json& v, const std::string& param) {
  std::vector<int32_t> ids;
  for (const json& t : v) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX) {
      return Invalid(param, absl::StrCat("'", param, "' token ids must be non-negative integers"));
    }
    ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  return ids;
}

absl::Status ParsePrompt(const json& j, OpenAiRequest& r) {
  auto it = j.find("prompt");
  if (it == j.end() || it->is_null()) return Invalid("prompt", "'prompt' is required");
  const json& p = *it;
  auto add_text = [&](const json& s) -> absl::Status {
    if (s.get_ref<const std::string&>().empty())
      return Invalid("prompt", "'prompt' must not be empty");
    r.prompt_texts.push_back(s.get<std::string>());
    r.prompt_ids.emplace_back();
    return absl::OkStatus();
  };
  if (p.is_string()) return add_text(p);
  if (!p.is_array() || p.empty()) {
    return Invalid("prompt", "'prompt' must be a string, an array of strings, or token ids");
  }
  if (p[0].is_number()) {  // one prompt of token ids
    ORCA_ASSIGN_OR_RETURN(auto ids, TokenIds(p, "prompt"));
    r.prompt_texts.emplace_back();
    r.prompt_ids.push_back(std::move(ids));
    return absl::OkStatus();
  }
  if (p.size() > kMaxPrompts)
    return Invalid("prompt", absl::StrCat("at most ", kMaxPrompts, " prompts per request"));
  for (const json& e : p) {
    if (e.is_string()) {
      ORCA_RETURN_IF_ERROR(add_text(e));
    } else if (e.is_array() && !e.empty()) {
      ORCA_ASSIGN_OR_RETURN(auto ids, TokenIds(e, "prompt"));
      r.prompt_texts.emplace_back();
      r.prompt_ids.push_back(std::move(ids));
    } else {
      return Invalid("prompt", "'prompt' must be a string, an array of strings, or token ids");
    }
  }
  return absl::OkStatus();
}

absl::Status ParseMessages(const json& j, OpenAiRequest& r) {
  auto it = j.find("messages");
  if (it == j.end() || !it->is_array()) return Invalid("messages", "'messages' must be an array");
  if (it->empty()) return Invalid("messages", "'messages' must not be empty");
  json out = json::array();
  for (size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    std::string where = absl::StrCat("messages[", i, "]");
    if (!m.is_object()) return Invalid(where, absl::StrCat("'", where, "' must be an object"));
    auto role = m.find("role");
    if (role == m.end() || !role->is_string())
      return Invalid(where + ".role", absl::StrCat("'", where, ".role' must be a string"));
    const std::string rs = role->get<std::string>();
    if (rs != "system" && rs != "user" && rs != "assistant" && rs != "tool" && rs != "developer" &&
        rs != "function") {
      return Invalid(where + ".role",
                     absl::StrCat("'", where, ".role' is '", rs,
                                  "'; expected system, developer, user, assistant or tool"));
    }
    json msg = m;
    auto content = m.find("content");
    if (content == m.end() || content->is_null()) {
      if (rs != "assistant")
        return Invalid(where + ".content", absl::StrCat("'", where, ".content' is required"));
      msg["content"] = "";
    } else if (content->is_array()) {
      std::string text;
      for (const json& part : *content) {
        if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) {
          return Invalid(where + ".content", "content parts must be objects with a 'type'");
        }
        if (part["type"] != "text" || !part.contains("text") || !part["text"].is_string()) {
          return Invalid(where + ".content",
                         absl::StrCat("content part type '", part["type"].get<std::string>(),
                                      "' is not supported (text only)"));
        }
        text += part["text"].get<std::string>();
      }
      msg["content"] = text;
    } else if (!content->is_string()) {
      return Invalid(where + ".content",
                     absl::StrCat("'", where, ".content' must be a string or an array of parts"));
    }
    ORCA_RETURN_IF_ERROR(NormalizeToolMessage(msg, where));
    out.push_back(std::move(msg));
  }
  r.messages = std::move(out);
  return absl::OkStatus();
}

absl::Status ParseStop(const json& j, OpenAiRequest& r) {
  auto it = j.find("stop");
  if (it == j.end() || it->is_null()) return absl::OkStatus();
  std::vector<std::string> stops;
  if (it->is_string()) {
    stops.push_back(it->get<std::string>());
  } else if (it->is_array()) {
    for (const json& s : *it) {
      if (!s.is_string()) return Invalid("stop", "'stop' must be a string or an array of strings");
      stops.push_back(s.get<std::string>());
    }
  } else {
    return Invalid("stop", "'stop' must be a string or an array of strings");
  }
  r.params.stop = std::move(stops);
  return absl::OkStatus();
}

absl::Status ParseSampling(const json& j, OpenAiRequest& r) {
  Fields f(j);
  SamplingParams& sp = r.params.sampling;
  for (const FloatRange& range : kFloatRanges) {
    ORCA_RETURN_IF_ERROR(f.Number(range.name, &(sp.*range.field)));
  }
  std::optional<int64_t> v;
  ORCA_RETURN_IF_ERROR(f.Int("top_k", -1, 1 << 20, &v));
  if (v) sp.top_k = static_cast<int32_t>(std::max<int64_t>(*v, 0));  // -1 means off
  v.reset();
  ORCA_RETURN_IF_ERROR(f.Int("seed", INT64_MIN, INT64_MAX, &v));
  if (v) r.seed = static_cast<uint64_t>(*v);
  if (const json* lb = f.Get("logit_bias")) {
    if (!lb->is_object())
      return Invalid("logit_bias", "'logit_bias' must be an object of token id -> bias");
    if (lb->size() > 300) return Invalid("logit_bias", "'logit_bias' may hold at most 300 entries");
    for (auto it = lb->begin(); it != lb->end(); ++it) {
      int64_t id = -1;
      try {
        size_t used = 0;
        id = std::stoll(it.key(), &used);
        if (used != it.key().size()) id = -1;
      } catch (...) {
        id = -1;
      }
      if (id < 0 || id > INT32_MAX || !it.value().is_number()) {
        return Invalid("logit_bias", "'logit_bias' keys must be token ids and values numbers");
      }
      double b = it.value().get<double>();
      if (b < -100 || b > 100)
        return Invalid("logit_bias", "'logit_bias' values must be between -100 and 100");
      sp.logit_bias.emplace_back(static_cast<int32_t>(id), static_cast<float>(b));
    }
  }
  return absl::OkStatus();
}

}  // namespace

namespace {

// Guided decoding (vLLM's extra fields): `guided_regex`, `guided_choice`, `guided_json`,
// `guided_grammar` or a `response_format`, at most one, each made into the pattern of
// the guide's automaton.
absl::Status ParseGuided(const json& j, OpenAiRequest& r) {
  Fields f(j);
  int given = 0;
  for (const char* k :
       {"guided_regex", "guided_choice", "guided_json", "guided_grammar", "response_format"}) {
    const json* v = f.Get(k);
    // (json::value would throw on a "type" that is not a string: compare instead.)
    const bool text_format = std::string_view(k) == "response_format" && v != nullptr &&
                             v->is_object() && v->contains("type") && (*v)["type"] == "text";
    given += v != nullptr && !text_format;
  }
  if (given > 1) {
    return Invalid("guided_json",
                   "only one of 'guided_regex', 'guided_choice', 'guided_json', "
                   "'guided_grammar' and a 'response_format' other than text may be given");
  }
  // A JSON schema (guided_json, response_format json_schema) or any JSON object.
  auto from_schema = [&](const json& schema, const char* param) -> absl::Status {
    absl::StatusOr<GuideSpec> guide = JsonSchemaToGuide(schema);
    if (!guide.ok()) return Invalid(param, std::string(guide.status().message()));
    r.guided_pattern = std::move(guide->pattern);
    r.guided_syntax = guide->syntax;
    r.guided_param = param;
    return absl::OkStatus();
  };
  if (const json* rf = f.Get("response_format")) {
    const json* type = rf->is_object() && rf->contains("type") ? &(*rf)["type"] : nullptr;
    if (type == nullptr || !type->is_string()) {
      return Invalid("response_format", "'response_format' must be an object with a 'type'");
    }
    if (*type == "json_object") {
      r.guided_pattern = JsonObjectGrammar();
      r.guided_syntax = GuideSyntax::kGbnf;
      r.guided_param = "response_format";
    } else if (*type == "json_schema") {
      const json* js = rf->contains("json_schema") ? &(*rf)["json_schema"] : nullptr;
      if (js == nullptr || !js->is_object() || !js->contains("schema")) {
        return Invalid("response_format",
                       "'response_format.json_schema' must be an object with a 'schema'");
      }
      ORCA_RETURN_IF_ERROR(from_schema((*js)["schema"], "response_format"));
    } else if (*type != "text") {
      return Invalid("response_format",
                     absl::StrCat("'response_format' of type ", type->dump(), " is not supported"));
    }
  }
  if (const json* schema = f.Get("guided_json")) {
    if (schema->is_string()) {  // vLLM also takes the schema as a JSON string
      const json parsed = json::parse(schema->get<std::string>(), nullptr, false);
      if (parsed.is_discarded()) return Invalid("guided_json", "'guided_json' is not valid JSON");
      ORCA_RETURN_IF_ERROR(from_schema(parsed, "guided_json"));
    } else {
      ORCA_RETURN_IF_ERROR(from_schema(*schema, "guided_json"));
    }
  }
  if (const json* grammar = f.Get("guided_grammar")) {
    if (!grammar->is_string())
      return Invalid("guided_grammar", "'guided_grammar' must be a string");
    const std::string& text = grammar->get_ref<const std::string&>();
    if (text.size() > kMaxGuidedBytes) {
      return Invalid("guided_grammar",
                     absl::StrCat("'guided_grammar' is limited to ", kMaxGuidedBytes, " bytes"));
    }
    // Compiled here to answer a bad grammar with a 400 before anything starts; the
    // engine's guide cache compiles it once more (cheap: states are made lazily).
    absl::StatusOr<std::unique_ptr<const GrammarAutomaton>> g = GrammarAutomaton::Compile(text);
    if (!g.ok()) return Invalid("guided_grammar", std::string(g.status().message()));
    r.guided_pattern = text;
    r.guided_syntax = GuideSyntax::kGbnf;
    r.guided_param = "guided_grammar";
  }
  const json* regex = f.Get("guided_regex");
  const json* choice = f.Get("guided_choice");
  if (regex != nullptr) {
    if (!regex->is_string()) return Invalid("guided_regex", "'guided_regex' must be a string");
    r.guided_pattern = regex->get<std::string>();
    if (r.guided_pattern.size() > kMaxGuidedBytes) {
      return Invalid("guided_regex",
                     absl::StrCat("'guided_regex' is limited to ", kMaxGuidedBytes, " bytes"));
    }
    r.guided_param = "guided_regex";
  }
  if (choice != nullptr) {
    if (!choice->is_array() || choice->empty() || choice->size() > kMaxGuidedChoices) {
      return Invalid("guided_choice", absl::StrCat("'guided_choice' must be an array of 1 to ",
                                                   kMaxGuidedChoices, " strings"));
    }
    std::vector<std::string> choices;
    size_t bytes = 0;
    for (const json& c : *choice) {
      if (!c.is_string()) return Invalid("guided_choice", "'guided_choice' must hold strings");
      choices.push_back(c.get<std::string>());
      bytes += choices.back().size();
    }
    if (bytes > kMaxGuidedBytes) {
      return Invalid("guided_choice",
                     absl::StrCat("'guided_choice' is limited to ", kMaxGuidedBytes, " bytes"));
    }
    r.guided_pattern = ChoicePattern(choices);
    r.guided_param = "guided_choice";
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<OpenAiRequest> ParseOpenAiRequest(const std::string& body, bool chat) {
  ORCA_ASSIGN_OR_RETURN(const json j, ParseBody(body));
  if (!j.is_object()) return Invalid("", "the request body must be a JSON object");
  OpenAiRequest r;
  r.chat = chat;
  Fields f(j);
  if (const json* m = f.Get("model")) {
    if (!m->is_string()) return Invalid("model", "'model' must be a string");
    r.model = m->get<std::string>();
  }
  if (chat) {
    ORCA_RETURN_IF_ERROR(ParseMessages(j, r));
    ORCA_RETURN_IF_ERROR(f.Bool("add_generation_prompt", &r.add_generation_prompt));
    if (const json* k = f.Get("chat_template_kwargs")) {
      if (!k->is_object())
        return Invalid("chat_template_kwargs", "'chat_template_kwargs' must be an object");
      r.chat_template_kwargs = *k;
    }
  } else {
    ORCA_RETURN_IF_ERROR(ParsePrompt(j, r));
    if (f.Get("suffix")) return Invalid("suffix", "'suffix' is not supported");
  }
  std::optional<int64_t> v;
  const char* max_field =
      chat && f.Get("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  ORCA_RETURN_IF_ERROR(f.Int(max_field, 1, 1 << 24, &v));
  r.max_tokens_given = v.has_value();
  r.params.max_tokens = v ? static_cast<int32_t>(*v) : (chat ? -1 : 16);
  v.reset();
  ORCA_RETURN_IF_ERROR(f.Int("min_tokens", INT32_MIN, INT32_MAX, &v));
  if (v) r.params.min_tokens = static_cast<int32_t>(*v);
  v.reset();
  ORCA_RETURN_IF_ERROR(f.Int("n", 1, kMaxN, &v));
  if (v) r.n = static_cast<int32_t>(*v);
  v.reset();
  ORCA_RETURN_IF_ERROR(f.Int("best_of", 1, kMaxN, &v));
  if (v && *v != r.n) return Invalid("best_of", "'best_of' other than n is not supported");
  ORCA_RETURN_IF_ERROR(f.Bool("stream", &r.stream));
  if (const json* so = f.Get("stream_options")) {
    if (!so->is_object()) return Invalid("stream_options", "'stream_options' must be an object");
    if (!r.stream)
      return Invalid("stream_options", "'stream_options' is only allowed when 'stream' is true");
    ORCA_RETURN_IF_ERROR(Fields(*so).Bool("include_usage", &r.include_usage));
  }
  ORCA_RETURN_IF_ERROR(f.Bool("ignore_eos", &r.params.ignore_eos));
  ORCA_RETURN_IF_ERROR(f.Bool("skip_special_tokens", &r.params.skip_special_tokens));
  ORCA_RETURN_IF_ERROR(f.Bool("include_stop_str_in_output", &r.params.include_stop_str_in_output));
  if (const json* ids = f.Get("stop_token_ids")) {
    if (!ids->is_array()) {
      return Invalid("stop_token_ids", "'stop_token_ids' must be an array of token ids");
    }
    ORCA_ASSIGN_OR_RETURN(r.params.stop_token_ids, TokenIds(*ids, "stop_token_ids"));
  }
  ORCA_RETURN_IF_ERROR(ParseStop(j, r));
  ORCA_RETURN_IF_ERROR(ParseSampling(j, r));
  if (chat) {
    bool want = false;
    ORCA_RETURN_IF_ERROR(f.Bool("logprobs", &want));
    v.reset();
    ORCA_RETURN_IF_ERROR(f.Int("top_logprobs", 0, kMaxLogprobs, &v));
    if (v && !want) return Invalid("top_logprobs", "'top_logprobs' requires 'logprobs' to be true");
    if (want) r.logprobs = v ? static_cast<int32_t>(*v) : 0;
  } else {
    ORCA_RETURN_IF_ERROR(f.Bool("echo", &r.echo));
    v.reset();
    ORCA_RETURN_IF_ERROR(f.Int("logprobs", INT32_MIN, INT32_MAX, &v));
    if (v) r.logprobs = static_cast<int32_t>(*v);
  }
  v.reset();
  ORCA_RETURN_IF_ERROR(f.Int("prompt_logprobs", INT32_MIN, INT32_MAX, &v));  // vLLM's extra field
  if (v) r.prompt_logprobs = static_cast<int32_t>(*v);
  r.params.sampling.logprobs = r.logprobs;
  r.params.sampling.prompt_logprobs = EffectivePromptLogprobs(r);
  ORCA_RETURN_IF_ERROR(ParseGuided(j, r));
  if (chat) ORCA_RETURN_IF_ERROR(ParseTools(j, r));
  ORCA_RETURN_IF_ERROR(ValidateOpenAiRequest(r));
  return r;
}

int32_t EffectivePromptLogprobs(const OpenAiRequest& r) {
  const int32_t echoed = !r.chat && r.echo ? r.logprobs : -1;
  return std::max(echoed, r.prompt_logprobs);
}

absl::Status ValidateOpenAiRequest(const OpenAiRequest& r) {
  const GenerateParams& p = r.params;
  for (const FloatRange& range : kFloatRanges) {
    const double v = p.sampling.*range.field;
    if (!std::isfinite(v) || v < range.lo || v > range.hi || (range.lo_open && v == range.lo)) {
      return Invalid(
          range.name,
          absl::StrCat("'", range.name, "' must be ", range.lo_open ? "greater than " : "between ",
                       range.lo, range.lo_open ? " and at most " : " and ", range.hi, ", got ", v));
    }
  }
  ORCA_RETURN_IF_ERROR(CheckInt("top_k", p.sampling.top_k, 0, 1 << 20));
  if (p.max_tokens != -1 || !r.chat) {  // chat: -1 until the prompt's length is known
    ORCA_RETURN_IF_ERROR(CheckInt("max_tokens", p.max_tokens, 1, 1 << 24));
  }
  ORCA_RETURN_IF_ERROR(CheckInt("min_tokens", p.min_tokens, 0, 1 << 24));
  if (p.max_tokens != -1 && p.min_tokens > p.max_tokens) {
    return Invalid("min_tokens", "'min_tokens' must not exceed 'max_tokens'");
  }
  if (r.logprobs != -1) ORCA_RETURN_IF_ERROR(CheckInt("logprobs", r.logprobs, 0, kMaxLogprobs));
  if (r.prompt_logprobs != -1) {
    ORCA_RETURN_IF_ERROR(CheckInt("prompt_logprobs", r.prompt_logprobs, 0, kMaxLogprobs));
  }
  if (static_cast<int32_t>(p.stop.size()) > kMaxStops) {
    return Invalid("stop", absl::StrCat("'stop' may hold at most ", kMaxStops, " strings"));
  }
  for (const auto& s : p.stop) {
    if (s.empty()) return Invalid("stop", "stop strings must not be empty");
    if (s.size() > kMaxStopLength) {
      return Invalid("stop",
                     absl::StrCat("stop strings are limited to ", kMaxStopLength, " bytes"));
    }
  }
  if (p.stop_token_ids.size() > 64) {
    return Invalid("stop_token_ids", "'stop_token_ids' may hold at most 64 token ids");
  }
  for (int32_t id : p.stop_token_ids)
    ORCA_RETURN_IF_ERROR(CheckInt("stop_token_ids", id, 0, INT32_MAX));
  if (r.n < 1 || r.n > kMaxN) return CheckInt("n", r.n, 1, kMaxN);
  return absl::OkStatus();
}

absl::StatusOr<TokenizeRequest> ParseTokenizeRequest(const std::string& body) {
  constexpr char kNotAnObject[] = "the request body must be a JSON object";
  ORCA_ASSIGN_OR_RETURN(const json j, ParseBody(body, kNotAnObject));
  if (!j.is_object()) return Invalid("", kNotAnObject);
  TokenizeRequest t;
  Fields f(j);
  if (const json* m = f.Get("model")) {
    if (!m->is_string()) return Invalid("model", "'model' must be a string");
    t.model = m->get<std::string>();
  }
  ORCA_RETURN_IF_ERROR(f.Bool("add_special_tokens", &t.add_special_tokens));
  ORCA_RETURN_IF_ERROR(f.Bool("add_generation_prompt", &t.add_generation_prompt));
  if (f.Get("messages")) {
    OpenAiRequest tmp;
    tmp.chat = true;
    ORCA_RETURN_IF_ERROR(ParseMessages(j, tmp));
    ORCA_RETURN_IF_ERROR(ParseTools(j, tmp));
    t.messages = std::move(tmp.messages);
    t.tools = std::move(tmp.tools);
    return t;
  }
  const json* p = f.Get("prompt");
  if (p == nullptr || !p->is_string()) return Invalid("prompt", "'prompt' must be a string");
  t.prompt = p->get<std::string>();
  return t;
}

absl::StatusOr<std::vector<int32_t>> ParseDetokenizeRequest(const std::string& body,
                                                            std::string* model) {
  constexpr char kNotAnObject[] = "the request body must be a JSON object";
  ORCA_ASSIGN_OR_RETURN(const json j, ParseBody(body, kNotAnObject));
  if (!j.is_object()) return Invalid("", kNotAnObject);
  Fields f(j);
  if (const json* m = f.Get("model")) {
    if (!m->is_string()) return Invalid("model", "'model' must be a string");
    *model = m->get<std::string>();
  }
  const json* t = f.Get("tokens");
  if (t == nullptr || !t->is_array())
    return Invalid("tokens", "'tokens' must be an array of token ids");
  return TokenIds(*t, "tokens");
}

}  // namespace orca
