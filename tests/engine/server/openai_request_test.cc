// ParseOpenAiRequest and friends: request bodies keep the client's key order into the
// chat template (as transformers' Python dicts do), and everything else about parsing,
// duplicate keys and malformed bodies included, is as with nlohmann::json.
#include "engine/server/openai_request.h"

#include <chrono>
#include <random>
#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "engine/chat/chat_template.h"
#include "engine/guided/byte_dfa.h"
#include "engine/guided/grammar_automaton.h"
#include "engine/guided/json_schema.h"
#include "gtest/gtest.h"

namespace orca {
namespace {

using nlohmann::ordered_json;

constexpr char kChatBody[] = R"json({"model": "m", "messages": [
  {"role": "system", "content": "sys"},
  {"role": "user", "name": "bob", "content": [{"type": "text", "text": "hi"}]},
  {"tool_calls": [{"type": "function", "id": "c1",
                   "function": {"name": "f", "arguments": {"unit": "c", "city": "Paris"}}}],
   "role": "assistant", "content": null}],
 "chat_template_kwargs": {"tools": [{"type": "function", "function": {"name": "f",
   "parameters": {"type": "object", "properties": {"unit": {}, "city": {}}}}}],
   "zeta": 1, "alpha": 2},
 "max_tokens": 4})json";

TEST(OpenAiRequestTest, ChatObjectsKeepTheRequestKeyOrder) {
  absl::StatusOr<OpenAiRequest> r = ParseOpenAiRequest(kChatBody, /*chat=*/true);
  ASSERT_TRUE(r.ok()) << r.status();
  // Content flattened in place; an assistant's null content becomes "" where it was.
  EXPECT_EQ(r->messages.dump(),
            R"([{"role":"system","content":"sys"},{"role":"user","name":"bob","content":"hi"},)"
            R"({"tool_calls":[{"type":"function","id":"c1","function":{"name":"f","arguments":)"
            R"({"unit":"c","city":"Paris"}}}],"role":"assistant","content":""}])");
  EXPECT_EQ(r->chat_template_kwargs.dump(),
            R"({"tools":[{"type":"function","function":{"name":"f","parameters":)"
            R"({"type":"object","properties":{"unit":{},"city":{}}}}}],"zeta":1,"alpha":2})");
}

TEST(OpenAiRequestTest, ChatTemplateSeesTheRequestKeyOrderAsInTransformers) {
  absl::StatusOr<OpenAiRequest> r = ParseOpenAiRequest(kChatBody, /*chat=*/true);
  ASSERT_TRUE(r.ok()) << r.status();
  // The context as HttpServer builds it: chat_template_kwargs, then the fixed variables.
  ordered_json context = r->chat_template_kwargs;
  context["messages"] = r->messages;
  context["add_generation_prompt"] = r->add_generation_prompt;
  absl::StatusOr<std::unique_ptr<ChatTemplate>> tmpl = ChatTemplate::Parse(
      "{{ tools | tojson }}\n{% for m in messages %}{% for k, v in m.items() %}"
      "{{ k }}={{ v | tojson }};{% endfor %}\n{% endfor %}{{ zeta }}{{ alpha }}");
  ASSERT_TRUE(tmpl.ok()) << tmpl.status();
  absl::StatusOr<std::string> out = (*tmpl)->Render(context);
  ASSERT_TRUE(out.ok()) << out.status();
  // transformers' renderer (Jinja2, tests/engine/chat/jinja_reference.py) on json.loads of
  // the same body.
  EXPECT_EQ(*out,
            "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"type\": "
            "\"object\", \"properties\": {\"unit\": {}, \"city\": {}}}}}]\nrole=\"system\";"
            "content=\"sys\";role=\"user\";name=\"bob\";content=\"hi\";tool_calls=[{\"type\": "
            "\"function\", \"id\": \"c1\", \"function\": {\"name\": \"f\", \"arguments\": "
            "{\"unit\": \"c\", \"city\": \"Paris\"}}}];role=\"assistant\";content=\"\";12");
}

TEST(OpenAiRequestTest, TokenizeMessagesKeepTheKeyOrder) {
  absl::StatusOr<TokenizeRequest> t =
      ParseTokenizeRequest(R"({"messages": [{"role": "user", "content": "x"}]})");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->messages.dump(), R"([{"role":"user","content":"x"}])");
}

TEST(OpenAiRequestTest, RepeatedKeysTakeTheLastValueInTheFirstPlace) {
  absl::StatusOr<OpenAiRequest> r = ParseOpenAiRequest(
      R"({"max_tokens": 1, "messages": [{"content": "a", "role": "user", "content": "b"}],
          "max_tokens": 5, "chat_template_kwargs": {"k": 1, "j": 2, "k": 3}})",
      /*chat=*/true);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->params.max_tokens, 5);
  EXPECT_EQ(r->messages.dump(), R"([{"content":"b","role":"user"}])");
  EXPECT_EQ(r->chat_template_kwargs.dump(), R"({"k":3,"j":2})");
}

TEST(OpenAiRequestTest, MalformedBodiesAreRejectedAsBefore) {
  for (const char* body : {"", "{", "{\"a\": 1} x", "{\"a\": 1e999}", "{\"a\": tru}", "{'a': 1}",
                           "{\"a\": 1,}", "[1, 2", "\"\\ud800\"x", "{\"a\": \"\xff\"}"}) {
    absl::StatusOr<OpenAiRequest> r = ParseOpenAiRequest(body, /*chat=*/true);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << body;
    EXPECT_EQ(r.status().message(), "the request body is not valid JSON") << body;
    EXPECT_EQ(ParseTokenizeRequest(body).status().message(),
              "the request body must be a JSON object")
        << body;
    std::string model;
    EXPECT_EQ(ParseDetokenizeRequest(body, &model).status().message(),
              "the request body must be a JSON object")
        << body;
  }
  for (const char* body : {"[]", "1", "null", "\"s\""}) {
    absl::StatusOr<OpenAiRequest> r = ParseOpenAiRequest(body, /*chat=*/false);
    EXPECT_EQ(r.status().message(), "the request body must be a JSON object") << body;
  }
  absl::StatusOr<OpenAiRequest> r =
      ParseOpenAiRequest(R"({"messages": [], "model": "m"})", /*chat=*/true);
  EXPECT_EQ(r.status().message(), "'messages' must not be empty");
  r = ParseOpenAiRequest(R"({"messages": [{"role": "user", "content": 3}]})", /*chat=*/true);
  EXPECT_EQ(r.status().message(), "'messages[0].content' must be a string or an array of parts");
}

// Structured-output fields of the wrong JSON types are 400s naming the field, never an
// exception out of the parser (json::value throws on a type mismatch).
TEST(OpenAiRequestTest, GuidedFieldsOfTheWrongTypesAreRefused) {
  for (
      const char* body :
      {R"({"prompt": "x", "response_format": {"type": 5}})",
       R"({"prompt": "x", "response_format": {"type": ["text"]}, "guided_regex": "a"})",
       R"({"prompt": "x", "response_format": "json_object"})",
       R"({"prompt": "x", "guided_json": {"type": "object", "properties": {"a": {"maxLength": "3"}}}})",
       R"({"prompt": "x", "guided_json": {"type": "array", "minItems": -1}})",
       R"({"prompt": "x", "guided_json": {"type": "integer", "minimum": "0"}})",
       R"({"prompt": "x", "guided_json": {"enum": 3}})",
       R"({"prompt": "x", "guided_json": {"$ref": 3}})",
       R"({"prompt": "x", "guided_choice": "yes"})"}) {
    absl::StatusOr<OpenAiRequest> r = ParseOpenAiRequest(body, /*chat=*/false);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << body;
  }
  absl::StatusOr<OpenAiRequest> text = ParseOpenAiRequest(
      R"({"prompt": "x", "response_format": {"type": "text"}, "guided_regex": "a"})",
      /*chat=*/false);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(text->guided_pattern, "a");
}

// Nesting is limited to 128 levels, refused while parsing (1.3M levels used to parse,
// at about 0.6 GB), with a message naming the limit; 128 levels still parse.
TEST(OpenAiRequestTest, NestingDeeperThanTheLimitIsRefused) {
  auto nested = [](size_t depth) {  // the top-level object is level 1
    return R"({"prompt": "hi", "x": )" + std::string(depth - 1, '[') + std::string(depth - 1, ']') +
           "}";
  };
  EXPECT_TRUE(ParseOpenAiRequest(nested(128), /*chat=*/false).ok());
  EXPECT_TRUE(ParseTokenizeRequest(nested(128)).ok());
  for (size_t depth : {size_t{129}, size_t{1300000}}) {
    absl::StatusOr<OpenAiRequest> r = ParseOpenAiRequest(nested(depth), /*chat=*/false);
    ASSERT_FALSE(r.ok()) << depth;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(),
              "the request body nests arrays and objects more than 128 levels deep");
    // Refused while parsing, at the 129th level: a body cut off after its deep part
    // gets the same answer, where a parse to the end would find it truncated first.
    const std::string whole = nested(depth);
    const std::string cut = whole.substr(0, whole.find(']'));
    EXPECT_EQ(ParseOpenAiRequest(cut, /*chat=*/false).status().message(), r.status().message())
        << depth;
    EXPECT_EQ(ParseTokenizeRequest(nested(depth)).status().message(), r.status().message());
    std::string model;
    EXPECT_EQ(ParseDetokenizeRequest(nested(depth), &model).status().message(),
              r.status().message());
  }
  // Levels inside chat messages count too.
  const std::string deep_message = R"({"messages": [{"role": "user", "content": "hi", "x": )" +
                                   std::string(200, '[') + std::string(200, ']') + "}]}";
  EXPECT_FALSE(ParseOpenAiRequest(deep_message, /*chat=*/true).ok());
}

TEST(OpenAiRequestTest, ManyKeysParseInLinearTime) {
  // ordered_json::parse would scan each object for every key: quadratic in the key count.
  std::string body = R"({"prompt": "p", "logit_bias": {}, "junk": {)";
  constexpr int kKeys = 400000;
  for (int i = 0; i < kKeys; ++i) {
    if (i > 0) body += ',';
    body += "\"k" + std::to_string(i) + "\":0";
  }
  body += "}}";
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<OpenAiRequest> r = ParseOpenAiRequest(body, /*chat=*/false);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_LT(seconds, 20.0);  // ~0.2 s; a quadratic parse takes many minutes
}

// A random JSON value with unique keys in random (not sorted) order.
ordered_json RandomValue(std::mt19937& rng, int depth) {
  std::uniform_int_distribution<int> kind(0, depth > 3 ? 4 : 6);
  switch (kind(rng)) {
    case 0:
      return nullptr;
    case 1:
      return rng() % 2 == 0;
    case 2:
      return static_cast<int64_t>(rng()) - (int64_t{1} << 31);
    case 3:
      return std::ldexp(static_cast<double>(rng() % 100000) - 50000.0, -7);
    case 4: {
      std::string str;
      const char* pieces[] = {"a", "b", "\"", "\\", "\n", "\u00e9", "z", "{", "}", ":", ","};
      for (int i = rng() % 6; i > 0; --i) str += pieces[rng() % 11];
      return str;
    }
    case 5: {
      ordered_json a = ordered_json::array();
      for (int i = rng() % 4; i > 0; --i) a.push_back(RandomValue(rng, depth + 1));
      return a;
    }
    default: {
      ordered_json o = ordered_json::object();
      for (int i = rng() % 5; i > 0; --i) {
        o[std::string(1, static_cast<char>('a' + rng() % 26)) + std::to_string(i)] =
            RandomValue(rng, depth + 1);
      }
      return o;
    }
  }
}

// The body parser against nlohmann's own ordered parse, on random documents, and on
// random corruptions of them (no crash, an error or a value, as nlohmann decides).
TEST(OpenAiRequestTest, BodyParserMatchesNlohmannOnRandomDocuments) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    ordered_json kwargs = ordered_json::object();
    kwargs["v"] = RandomValue(rng, 0);
    kwargs["w"] = RandomValue(rng, 0);
    const std::string body = R"({"model":"m","messages":[{"role":"user","content":"x"}],)"
                             R"("chat_template_kwargs":)" +
                             kwargs.dump(rng() % 2 == 0 ? -1 : 1) + "}";
    absl::StatusOr<OpenAiRequest> r = ParseOpenAiRequest(body, /*chat=*/true);
    ASSERT_TRUE(r.ok()) << r.status() << "\n" << body;
    ASSERT_EQ(r->chat_template_kwargs.dump(), kwargs.dump()) << body;

    std::string broken = body;
    for (int k = 1 + rng() % 3; k > 0; --k) {
      const size_t at = rng() % broken.size();
      switch (rng() % 3) {
        case 0:
          broken[at] = "{}[]\",:0\\ x"[rng() % 12];
          break;
        case 1:
          broken.erase(at, 1);
          break;
        default:
          broken.insert(at, 1, "{}[]\",:"[rng() % 7]);
      }
    }
    const bool valid = ordered_json::accept(broken);
    absl::StatusOr<OpenAiRequest> b = ParseOpenAiRequest(broken, /*chat=*/true);
    if (!valid) {
      EXPECT_FALSE(b.ok()) << broken;
    }
  }
}

// Tool calling: `tools`, `tool_choice`, `parallel_tool_calls`, and the history's calls.
constexpr char kTools[] = R"json([
  {"type": "function", "function": {"name": "get_weather", "description": "d",
   "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 8}},
                  "required": ["city"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "ping"}}])json";

absl::StatusOr<OpenAiRequest> ChatWithTools(const std::string& extra) {
  return ParseOpenAiRequest(
      absl::StrCat(R"({"messages": [{"role": "user", "content": "hi"}], )", R"("tools": )", kTools,
                   extra.empty() ? "" : ", ", extra, "}"),
      /*chat=*/true);
}

TEST(OpenAiRequestTest, ToolChoiceDefaultsToAutoAndForcedChoicesBecomeGuides) {
  absl::StatusOr<OpenAiRequest> r = ChatWithTools("");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->tool_choice, ToolChoice::kAuto);
  EXPECT_EQ(r->tools.size(), 2u);
  EXPECT_TRUE(r->guided_pattern.empty());

  // A named function: the output is its arguments.
  r = ChatWithTools(R"("tool_choice": {"type": "function", "function": {"name": "get_weather"}})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->tool_choice, ToolChoice::kNamed);
  EXPECT_EQ(r->tool_choice_name, "get_weather");
  EXPECT_EQ(r->guided_param, "tool_choice");
  absl::StatusOr<ByteDfa> named = ByteDfa::Compile(r->guided_pattern);
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_TRUE(named->Matches(R"({"city": "Paris"})"));
  EXPECT_FALSE(named->Matches(R"({"city": "Paris is far"})"));  // maxLength 8
  EXPECT_FALSE(named->Matches(R"({"name": "get_weather", "arguments": {"city": "Paris"}})"));

  // "required": a list of calls to any of the tools; one only without parallel calls.
  r = ChatWithTools(R"("tool_choice": "required")");
  ASSERT_TRUE(r.ok()) << r.status();
  absl::StatusOr<ByteDfa> list = ByteDfa::Compile(r->guided_pattern);
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_TRUE(list->Matches(R"([{"name": "ping", "arguments": {}}])"));
  EXPECT_TRUE(list->Matches(
      R"([{"name": "get_weather", "arguments": {"city": "Oslo"}}, {"name": "ping", "arguments": {}}])"));
  EXPECT_FALSE(list->Matches("[]"));
  EXPECT_FALSE(list->Matches(R"([{"name": "pong", "arguments": {}}])"));
  EXPECT_FALSE(list->Matches(R"([{"name": "ping", "arguments": {"x": 1}}])"));
  r = ChatWithTools(R"("tool_choice": "required", "parallel_tool_calls": false)");
  ASSERT_TRUE(r.ok()) << r.status();
  list = ByteDfa::Compile(r->guided_pattern);
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_TRUE(list->Matches(R"([{"name": "ping", "arguments": {}}])"));
  EXPECT_FALSE(
      list->Matches(R"([{"name": "ping", "arguments": {}}, {"name": "ping", "arguments": {}}])"));

  r = ChatWithTools(R"("tool_choice": "none")");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->tool_choice, ToolChoice::kNone);
  EXPECT_TRUE(r->guided_pattern.empty());
}

// Recursive parameters (a tree through "#", a list through $defs) keep their meaning
// when the forced guide puts every tool into one schema: the guide is a grammar.
TEST(OpenAiRequestTest, RecursiveToolParametersAreEnforcedAsGrammars) {
  const std::string tools = R"json([
    {"type": "function", "function": {"name": "tree", "parameters": {
      "type": "object", "properties": {"v": {"type": "integer"},
        "kids": {"type": "array", "items": {"$ref": "#"}}},
      "required": ["v", "kids"], "additionalProperties": false}}},
    {"type": "function", "function": {"name": "list", "parameters": {
      "type": "object", "properties": {"head": {"$ref": "#/$defs/cell"}},
      "required": ["head"], "additionalProperties": false,
      "$defs": {"cell": {"type": "object", "properties": {"x": {"type": "boolean"},
        "next": {"anyOf": [{"$ref": "#/$defs/cell"}, {"type": "null"}]}},
        "required": ["x", "next"], "additionalProperties": false}}}}}])json";
  auto guide_of = [&](const std::string& choice) {
    absl::StatusOr<OpenAiRequest> r = ParseOpenAiRequest(
        absl::StrCat(R"({"messages": [{"role": "user", "content": "hi"}], "tools": )", tools,
                     R"(, "tool_choice": )", choice, "}"),
        /*chat=*/true);
    EXPECT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->guided_syntax, GuideSyntax::kJsonSchema);
    absl::StatusOr<GbnfRules> rules =
        JsonSchemaToGrammar(nlohmann::ordered_json::parse(r->guided_pattern));
    EXPECT_TRUE(rules.ok()) << rules.status();
    return *GrammarAutomaton::Compile(*rules);
  };
  auto list = guide_of(R"("required")");
  EXPECT_TRUE(list->Matches(
      R"([{"name": "tree", "arguments": {"v": 1, "kids": [{"v": 2, "kids": [{"v": 3, "kids": []}]}]}}])"));
  EXPECT_TRUE(list->Matches(
      R"([{"name": "list", "arguments": {"head": {"x": true, "next": {"x": false, "next": null}}}}])"));
  EXPECT_FALSE(list->Matches(  // "#" is the tree's parameters, not the list of calls
      R"([{"name": "tree", "arguments": {"v": 1, "kids": [[{"name": "tree", "arguments": {"v": 2, "kids": []}}]]}}])"));
  EXPECT_FALSE(list->Matches(
      R"([{"name": "list", "arguments": {"head": {"x": true, "next": {"x": 1, "next": null}}}}])"));
  auto named = guide_of(R"({"type": "function", "function": {"name": "tree"}})");
  EXPECT_TRUE(named->Matches(R"({"v": 1, "kids": [{"v": 2, "kids": []}, {"v": 3, "kids": []}]})"));
  EXPECT_FALSE(named->Matches(R"({"v": 1, "kids": [{"v": 2}]})"));
}

TEST(OpenAiRequestTest, BadToolRequestsNameTheField) {
  const std::pair<std::string, std::string> cases[] = {
      {R"("tool_choice": "sometimes")", "tool_choice"},
      {R"("tool_choice": {"type": "function", "function": {"name": "nope"}})", "tool_choice"},
      {R"("tool_choice": {"type": "function"})", "tool_choice"},
      {R"("tool_choice": "required", "guided_regex": "a")", "tool_choice"},
      {R"("parallel_tool_calls": "yes")", "parallel_tool_calls"},
  };
  for (const auto& [extra, param] : cases) {
    absl::StatusOr<OpenAiRequest> r = ChatWithTools(extra);
    ASSERT_FALSE(r.ok()) << extra;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << extra;
    EXPECT_EQ(r.status().GetPayload(kParamPayload).value_or(absl::Cord()), param) << extra;
  }
  const std::pair<std::string, std::string> bodies[] = {
      {R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "auto"})", "tool_choice"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": {}})", "tools"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "code"}]})",
       "tools[0]"},
      {R"({"messages": [{"role": "user", "content": "x"}],
           "tools": [{"type": "function", "function": {"name": "a b"}}]})",
       "tools[0].function.name"},
      {R"({"messages": [{"role": "user", "content": "x"}],
           "tools": [{"type": "function", "function": {"name": "a"}},
                     {"type": "function", "function": {"name": "a"}}]})",
       "tools[1].function.name"},
      {R"({"messages": [{"role": "user", "content": "x"}],
           "tools": [{"type": "function", "function": {"name": "a", "parameters": []}}]})",
       "tools[0].function.parameters"},
      // A schema the guide cannot enforce is refused only when a call is forced.
      {R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required",
           "tools": [{"type": "function", "function": {"name": "a",
                      "parameters": {"type": "object", "patternProperties": {}}}}]})",
       "tools[0].function.parameters"},
      {R"({"messages": [{"role": "user", "content": "x"},
           {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{x"}}]}]})",
       "messages[1].tool_calls[0].function.arguments"},
      {R"({"messages": [{"role": "user", "content": "x", "tool_calls": []}]})",
       "messages[0].tool_calls"},
      {R"({"messages": [{"role": "tool", "content": "x", "tool_call_id": 7}]})",
       "messages[0].tool_call_id"},
  };
  for (const auto& [body, param] : bodies) {
    absl::StatusOr<OpenAiRequest> r = ParseOpenAiRequest(body, /*chat=*/true);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_EQ(r.status().GetPayload(kParamPayload).value_or(absl::Cord()), param) << body;
  }
  EXPECT_TRUE(ParseOpenAiRequest(
                  R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "auto",
                      "tools": [{"type": "function", "function": {"name": "a",
                      "parameters": {"type": "object", "patternProperties": {}}}}]})",
                  /*chat=*/true)
                  .ok());
}

TEST(OpenAiRequestTest, HistoryToolCallArgumentsBecomeObjectsForTheTemplate) {
  absl::StatusOr<OpenAiRequest> r = ParseOpenAiRequest(
      R"({"messages": [{"role": "user", "content": "x"},
          {"role": "assistant", "content": null, "tool_calls": [{"id": "abc", "type": "function",
            "function": {"name": "f", "arguments": "{\"z\": 1, \"a\": [2]}"}}]},
          {"role": "tool", "tool_call_id": "abc", "content": "ok"}]})",
      /*chat=*/true);
  ASSERT_TRUE(r.ok()) << r.status();
  const ordered_json& args = r->messages[1]["tool_calls"][0]["function"]["arguments"];
  ASSERT_TRUE(args.is_object());
  EXPECT_EQ(args.dump(), R"({"z":1,"a":[2]})");  // the client's key order
  EXPECT_EQ(r->messages[2]["tool_call_id"], "abc");
}

}  // namespace
}  // namespace orca
