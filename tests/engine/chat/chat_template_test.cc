// Unit tests of orca::ChatTemplate that need no Python: pinned renders of real templates
// (expected outputs produced by Jinja2 as transformers configures it), error reporting,
// the budgets that stop runaway templates, and concurrent rendering.
#include "engine/chat/chat_template.h"

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/chat/reference.h"

namespace orca {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

json Conversation() {
  return json{
      {"messages", json::array({{{"role", "system"}, {"content", "You are a helpful assistant."}},
                                {{"role", "user"}, {"content", "Hello"}},
                                {{"role", "assistant"}, {"content", "Hi there"}},
                                {{"role", "user"}, {"content", "Who are you?"}}})},
      {"add_generation_prompt", true},
      {"bos_token", "<s>"},
      {"eos_token", "</s>"},
      {"tools", nullptr}};
}

std::unique_ptr<ChatTemplate> MustParse(const std::string& source) {
  absl::StatusOr<std::unique_ptr<ChatTemplate>> tmpl = ChatTemplate::Parse(source);
  EXPECT_TRUE(tmpl.ok()) << tmpl.status();
  return tmpl.ok() ? std::move(*tmpl) : nullptr;
}

absl::StatusOr<std::string> Render(const std::string& source, const nlohmann::ordered_json& context,
                                   size_t max_output_bytes = 1 << 20) {
  absl::StatusOr<std::unique_ptr<ChatTemplate>> tmpl = ChatTemplate::Parse(source);
  if (!tmpl.ok()) return tmpl.status();
  return (*tmpl)->Render(context, max_output_bytes);
}

std::string Family(const std::string& file) { return chat_test::ReadTestFile("testdata/" + file); }

// Expected strings rendered by jinja2 3.1 (ImmutableSandboxedEnvironment, trim_blocks,
// lstrip_blocks), i.e. what transformers' apply_chat_template returns.
TEST(ChatTemplateTest, RendersLlama3LikeTransformers) {
  EXPECT_EQ(*Render(Family("llama3_instruct.jinja"), Conversation()),
            "<s><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant."
            "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nWho are you?<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplateTest, RendersZephyrWithTrimBlocks) {
  EXPECT_EQ(*Render(Family("zephyr_7b_beta.jinja"), Conversation()),
            "<|system|>\nYou are a helpful assistant.</s>\n<|user|>\nHello</s>\n"
            "<|assistant|>\nHi there</s>\n<|user|>\nWho are you?</s>\n<|assistant|>\n");
}

TEST(ChatTemplateTest, RendersMistralV03) {
  EXPECT_EQ(*Render(Family("mistral_7b_instruct_v03.jinja"), Conversation()),
            "<s>[INST] Hello[/INST] Hi there</s>[INST] You are a helpful assistant.\n\n"
            "Who are you?[/INST]");
}

TEST(ChatTemplateTest, RendersQwen25) {
  EXPECT_EQ(*Render(Family("qwen25_instruct.jinja"), Conversation()),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
            "Hello<|im_end|>\n<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\n"
            "Who are you?<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplateTest, RendersLlama2) {
  EXPECT_EQ(*Render(Family("llama2_chat.jinja"), Conversation()),
            "<s>[INST] <<SYS>>\nYou are a helpful assistant.\n<</SYS>>\n\nHello [/INST] "
            "Hi there </s><s>[INST] Who are you? [/INST]");
}

TEST(ChatTemplateTest, RaiseExceptionGivesTheTemplatesMessage) {
  json context = Conversation();
  context["messages"] =
      json::array({{{"role", "user"}, {"content", "a"}}, {{"role", "user"}, {"content", "b"}}});
  absl::StatusOr<std::string> out = Render(Family("mistral_7b_instruct_v02.jinja"), context);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(out.status().message(),
            "Conversation roles must alternate user/assistant/user/assistant/...");
}

TEST(ChatTemplateTest, ParseErrorsNameLineAndColumn) {
  absl::StatusOr<std::unique_ptr<ChatTemplate>> tmpl =
      ChatTemplate::Parse("Hello\n{% if x %}\n  {{ x + }}\n{% endif %}");
  ASSERT_FALSE(tmpl.ok());
  EXPECT_EQ(tmpl.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(tmpl.status().message(), HasSubstr("line 3, column 10"));
  EXPECT_THAT(tmpl.status().message(), HasSubstr("unexpected end of print statement"));
}

TEST(ChatTemplateTest, ParseErrorsDescribeTheProblem) {
  struct Case {
    const char* source;
    const char* position;
    const char* problem;
  };
  const Case cases[] = {
      {"{% for m in messages %}{{ m }}", "line 1, column 31", "expected 'endfor' or 'else'"},
      {"a\n{% frobnicate %}", "line 2, column 4", "unknown tag 'frobnicate'"},
      {"{{ x | nosuchfilter }}", "line 1, column 8", "no filter named 'nosuchfilter'"},
      {"{{ 'unterminated }}", "line 1, column 4", "unterminated string literal"},
      {"{# never closed", "line 1, column 1", "missing end of comment tag"},
      {"{{ (1, 2]] }}", "line 1, column 9", "unexpected ']', expected ')'"},
      {"{% set 1 = 2 %}", "line 1, column 8", "can't assign"},
      {"{% break %}", "line 1, column 4", "'break' outside of a loop"},
      {"{% macro m(a=1, b) %}{% endmacro %}", "line 1, column 18",
       "non-default argument follows default argument"},
      {"{% extends 'base.html' %}", "line 1, column 4", "not supported"},
      {"héllo {{ x ! }}", "line 1, column 12", "unexpected char '!'"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::unique_ptr<ChatTemplate>> tmpl = ChatTemplate::Parse(c.source);
    ASSERT_FALSE(tmpl.ok()) << c.source;
    EXPECT_EQ(tmpl.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(tmpl.status().message(), HasSubstr(c.position)) << c.source;
    EXPECT_THAT(tmpl.status().message(), HasSubstr(c.problem)) << c.source;
  }
}

TEST(ChatTemplateTest, RuntimeErrorsNameThePosition) {
  absl::StatusOr<std::string> out = Render("ok\n  {{ messages.nope.deeper }}", Conversation());
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("line 2"));
  EXPECT_THAT(out.status().message(), HasSubstr("has no attribute 'nope'"));
}

TEST(ChatTemplateTest, UndefinedCallablesAreErrors) {
  absl::StatusOr<std::string> out = Render("{{ no_such_function(1) }}", Conversation());
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("'no_such_function' is undefined"));
}

TEST(ChatTemplateTest, OutputLimitIsEnforced) {
  const std::string source = "{% for i in range(1000) %}0123456789{% endfor %}";
  EXPECT_TRUE(Render(source, json::object(), 10000).ok());
  absl::StatusOr<std::string> out = Render(source, json::object(), 9999);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("exceeds 9999 bytes"));
}

TEST(ChatTemplateTest, RunawayTemplatesStopQuickly) {
  const char* const sources[] = {
      // 10^10 loop iterations without output.
      "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
      // Unbounded recursion.
      "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
      // Exponential recursion that stays shallow.
      "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}"
      "{{ f(30) }}",
      // A string that doubles on every iteration.
      "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}"
      "{% endfor %}{{ ns.s|length }}",
      // A list that doubles on every iteration.
      "{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}"
      "{% endfor %}{{ ns.l|length }}",
      "{{ 'x' * 100000000 }}",
  };
  for (const char* source : sources) {
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::string> out = Render(source, json::object());
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_FALSE(out.ok()) << source;
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << source;
    EXPECT_LT(seconds, 60.0) << source;  // ~1 s in an optimized build
  }
}

TEST(ChatTemplateTest, RejectsBadContexts) {
  std::unique_ptr<ChatTemplate> tmpl = MustParse("{{ messages }}");
  EXPECT_EQ(tmpl->Render(json::array()).status().code(), absl::StatusCode::kInvalidArgument);
  // (Deep enough to be rejected; nlohmann::json itself copies recursively.)
  const json deep = json::parse(std::string(1000, '[') + std::string(1000, ']'));
  absl::StatusOr<std::string> out = tmpl->Render(json{{"messages", deep}});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("nested deeper"));
}

TEST(ChatTemplateTest, RejectsDeeplyNestedTemplates) {
  const std::string parens(20000, '(');
  EXPECT_FALSE(ChatTemplate::Parse("{{ " + parens + " }}").ok());
  std::string ifs;
  for (int i = 0; i < 5000; ++i) ifs += "{% if x %}";
  EXPECT_FALSE(ChatTemplate::Parse(ifs).ok());
  std::string nots = "{{ ";
  for (int i = 0; i < 20000; ++i) nots += "not ";
  EXPECT_FALSE(ChatTemplate::Parse(nots + "x }}").ok());
}

TEST(ChatTemplateTest, LongOperatorChainsAreBounded) {
  std::string chain = "{{ 1";
  for (int i = 0; i < 100000; ++i) chain += " + 1";
  absl::StatusOr<std::unique_ptr<ChatTemplate>> tmpl = ChatTemplate::Parse(chain + " }}");
  ASSERT_FALSE(tmpl.ok());
  EXPECT_THAT(tmpl.status().message(), HasSubstr("nested deeper"));
  std::string filters = "{{ x";
  for (int i = 0; i < 100000; ++i) filters += "|trim";
  EXPECT_FALSE(ChatTemplate::Parse(filters + " }}").ok());
  std::string attrs = "{{ x";
  for (int i = 0; i < 100000; ++i) attrs += ".a";
  EXPECT_FALSE(ChatTemplate::Parse(attrs + " }}").ok());
}

// The deepest template the limits allow (statements, expression height and macro
// recursion all near their maximum) renders within an ordinary 8 MiB stack.
TEST(ChatTemplateTest, WorstCaseNestingFitsTheStack) {
  std::string source = "{% macro f(n) %}";
  for (int i = 0; i < 60; ++i) source += "{% if n >= 0 %}";
  source += "{% if n > 0 %}{{ f(n - 1)";
  for (int i = 0; i < 150; ++i) source += " ~ ''";
  source += " }}{% endif %}";
  for (int i = 0; i < 60; ++i) source += "{% endif %}";
  source += "x{% endmacro %}{{ f(31) }}";
  absl::StatusOr<std::string> out = Render(source, json::object());
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, std::string(32, 'x'));
  // One level deeper fails cleanly.
  source.replace(source.find("f(31)"), 5, "f(32)");
  EXPECT_FALSE(Render(source, json::object()).ok());
}

TEST(ChatTemplateTest, RenderIsThreadSafe) {
  std::unique_ptr<ChatTemplate> tmpl = MustParse(Family("hermes_tool_use.jinja"));
  json context = Conversation();
  context["tools"] = json::parse(R"([{"type": "function", "function": {"name": "f",
      "description": "d", "parameters": {"type": "object", "properties": {
      "a": {"type": "array", "items": {"type": "string"}, "description": "x"}}}}}])");
  const std::string expected = *tmpl->Render(context);
  std::vector<std::thread> threads;
  std::vector<int> mismatches(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        absl::StatusOr<std::string> out = tmpl->Render(context);
        if (!out.ok() || *out != expected) ++mismatches[t];
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

TEST(ChatTemplateTest, ContextKeysFollowTheJsonObjectOrder) {
  // Dicts built from the context keep its objects' order: nlohmann::ordered_json keeps
  // the document's order (as Python's json does), nlohmann::json has its keys sorted.
  const std::string source = "{{ d|tojson }} {% for k in d %}{{ k }}{% endfor %}";
  EXPECT_EQ(*Render(source, json{{"d", json{{"b", 1}, {"a", 2}}}}), "{\"a\": 2, \"b\": 1} ab");
  EXPECT_EQ(*Render(source, nlohmann::ordered_json::parse(R"({"d": {"b": 1, "a": 2}})")),
            "{\"b\": 1, \"a\": 2} ba");
}

TEST(ChatTemplateTest, RequestKeyOrderReachesTheTemplateAsInTransformers) {
  // Expected outputs from transformers' renderer (Jinja2) on the same JSON text.
  const nlohmann::ordered_json context = nlohmann::ordered_json::parse(R"json({
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
      "properties": {"unit": {"type": "string"}, "city": {"type": "string"}}}}}],
    "messages": [{"role": "user", "name": "bob", "content": "hi"}],
    "d": {"zeta": 1, "alpha": 2, "zeta": 3}
  })json");
  EXPECT_EQ(*Render("{{ tools | tojson }}", context),
            "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": "
            "{\"type\": \"object\", \"properties\": {\"unit\": {\"type\": \"string\"}, "
            "\"city\": {\"type\": \"string\"}}}}}]");
  EXPECT_EQ(*Render("{% for k, v in messages[0].items() %}{{ k }}={{ v }};{% endfor %}", context),
            "role=user;name=bob;content=hi;");
  // A repeated key keeps its first place and its last value, like json.loads.
  EXPECT_EQ(*Render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", context),
            "zeta=3;alpha=2;");
}

}  // namespace
}  // namespace orca
