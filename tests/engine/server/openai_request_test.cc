// ParseOpenAiRequest and friends: request bodies keep the client's key order into the
// chat template (as transformers' Python dicts do), and everything else about parsing,
// duplicate keys and malformed bodies included, is as with nlohmann::json.
#include "engine/server/openai_request.h"

#include <chrono>
#include <random>
#include <string>

#include "engine/chat/chat_template.h"
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

}  // namespace
}  // namespace orca
