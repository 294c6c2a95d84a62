// Random and mutated templates never crash or hang: Parse and Render either succeed or
// fail with InvalidArgument. Runs under the sanitizer configuration too. Rendering uses
// the interpreter with a small step budget so that runaway inputs fail fast.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/chat/chat_template.h"
#include "engine/chat/internal/interpreter.h"
#include "engine/chat/internal/lexer.h"
#include "engine/chat/internal/parser.h"
#include "gtest/gtest.h"
#include "tests/engine/chat/reference.h"

namespace orca {
namespace {

using nlohmann::json;

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    state_ += 0x9E3779B97F4A7C15ull;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  size_t Below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(Next() % n); }

 private:
  uint64_t state_;
};

const std::vector<std::string>& Fragments() {
  static const auto* fragments = new std::vector<std::string>{
      "{{",
      "}}",
      "{%",
      "%}",
      "{#",
      "#}",
      "{%-",
      "-%}",
      "{{-",
      "-}}",
      "{%+",
      "+%}",
      " ",
      "\n",
      "  ",
      "x",
      "m",
      "messages",
      "message['content']",
      "loop",
      "loop.index",
      "loop.last",
      "for ",
      " in ",
      "if ",
      "endif",
      "endfor",
      "else",
      "elif ",
      "set ",
      " = ",
      "macro ",
      "endmacro",
      "call ",
      "endcall",
      "filter ",
      "endfilter",
      "with ",
      "endwith",
      "raw",
      "endraw",
      "break",
      "continue",
      "generation",
      "endgeneration",
      "print ",
      "(",
      ")",
      "[",
      "]",
      "{",
      "}",
      ",",
      ":",
      "|",
      ".",
      "~",
      "+",
      "-",
      "*",
      "**",
      "/",
      "//",
      "%",
      "'",
      "\"",
      "'a'",
      "\"b\"",
      "1",
      "0",
      "-1",
      "1.5",
      "1e308",
      "9223372036854775807",
      "true",
      "none",
      "is ",
      "not ",
      "and ",
      "or ",
      "defined",
      "string",
      "namespace(",
      "ns",
      "ns.x",
      "range(",
      "99999",
      "range(99999)",
      "tojson",
      "tojson(indent=2)",
      "trim",
      "length",
      "first",
      "last",
      "selectattr(",
      "map(",
      "join",
      "items()",
      "items",
      "raise_exception(",
      "caller()",
      "varargs",
      "kwargs",
      "[::-1]",
      "[1:]",
      "'%s' %",
      "format(",
      "\\",
      "\\x41",
      "\\u00e9",
      "é",
      "👋",
      "\xff",
      "\xc3",
      "\r\n",
      "\t",
      "add_generation_prompt",
      "bos_token",
      "tools",
      "strftime_now('%Y')",
      "dict(",
      "lipsum",
      "upper",
      "replace(",
      "split(",
      "strip()",
  };
  return *fragments;
}

json Context() {
  return json{
      {"messages", json::array({{{"role", "system"}, {"content", "sys"}},
                                {{"role", "user"}, {"content", "Hi ✓"}},
                                {{"role", "assistant"}, {"content", "Hello"}}})},
      {"add_generation_prompt", true},
      {"bos_token", "<s>"},
      {"eos_token", "</s>"},
      {"tools", json::array({{{"type", "function"},
                              {"function", {{"name", "f"}, {"parameters", json::object()}}}}})},
      {"x", 1},
      {"m", {{"a", json::array({1, 2})}}}};
}

// Parses and renders `source` as ChatTemplate does, with a small step budget; returns
// the status code of the first failure (kOk when it renders).
absl::StatusCode ParseAndRender(const std::string& source) {
  absl::StatusOr<std::unique_ptr<ChatTemplate>> tmpl = ChatTemplate::Parse(source);
  if (!tmpl.ok()) return tmpl.status().code();
  const std::string normalized = chat_internal::NormalizeSource(source);
  absl::StatusOr<std::vector<chat_internal::Token>> tokens = chat_internal::Tokenize(normalized);
  if (!tokens.ok()) return absl::StatusCode::kInternal;  // Parse() accepted it
  absl::StatusOr<chat_internal::Body> body = chat_internal::ParseTemplate(normalized, *tokens);
  if (!body.ok()) return absl::StatusCode::kInternal;
  chat_internal::RenderLimits limits;
  limits.max_output_bytes = 1 << 16;
  limits.max_steps = 200000;
  chat_internal::Interpreter interpreter(limits);
  interpreter.set_source(&normalized);
  absl::StatusOr<chat_internal::Value> context = chat_internal::FromJson(Context());
  absl::StatusOr<std::string> out = interpreter.Render(*body, *context);
  return out.ok() ? absl::StatusCode::kOk : out.status().code();
}

// Render failures the interpreter may report before ChatTemplate maps them to
// InvalidArgument: template errors, budgets, raise_exception, unsupported filters.
bool IsExpectedFailure(absl::StatusCode code) {
  return code == absl::StatusCode::kOk || code == absl::StatusCode::kInvalidArgument ||
         code == absl::StatusCode::kResourceExhausted || code == absl::StatusCode::kAborted ||
         code == absl::StatusCode::kUnimplemented;
}

// ORCA_CHAT_FUZZ_ITERATIONS scales the number of inputs (e.g. for sanitizer runs).
int Iterations(int fallback) {
  const char* value = std::getenv("ORCA_CHAT_FUZZ_ITERATIONS");
  return value != nullptr ? std::atoi(value) : fallback;
}

TEST(ChatTemplateFuzzTest, RandomFragmentSoupNeverCrashes) {
  Rng rng(12345);
  const auto start = std::chrono::steady_clock::now();
  int rendered = 0;
  for (int iteration = 0; iteration < Iterations(4000); ++iteration) {
    std::string source;
    const size_t n = 1 + rng.Below(40);
    for (size_t i = 0; i < n; ++i) source += Fragments()[rng.Below(Fragments().size())];
    const absl::StatusCode code = ParseAndRender(source);
    EXPECT_TRUE(IsExpectedFailure(code))
        << "status " << static_cast<int>(code) << " for "
        << json(source).dump(-1, ' ', false, json::error_handler_t::replace);
    if (code == absl::StatusCode::kOk) ++rendered;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 120.0 * std::max(1, Iterations(4000) / 4000));
  EXPECT_GT(rendered, 100);
}

TEST(ChatTemplateFuzzTest, MutatedRealTemplatesNeverCrash) {
  const char* const files[] = {"llama31_instruct.jinja",         "qwen25_instruct.jinja",
                               "hermes_tool_use.jinja",          "mistral_7b_instruct_v03.jinja",
                               "firefunction_v2.jinja",          "llama2_chat.jinja",
                               "deepseek_r1_distill_qwen.jinja", "functionary_medium_v31.jinja"};
  std::vector<std::string> seeds;
  for (const char* file : files)
    seeds.push_back(chat_test::ReadTestFile(std::string("testdata/") + file));
  ASSERT_FALSE(seeds[0].empty()) << "testdata missing";
  Rng rng(777);
  const auto start = std::chrono::steady_clock::now();
  for (int iteration = 0; iteration < Iterations(3000); ++iteration) {
    std::string source = seeds[rng.Below(seeds.size())];
    const size_t mutations = 1 + rng.Below(4);
    for (size_t k = 0; k < mutations && !source.empty(); ++k) {
      const size_t pos = rng.Below(source.size());
      const size_t len = 1 + rng.Below(24);
      switch (rng.Below(5)) {
        case 0:
          source.erase(pos, len);
          break;
        case 1:
          source.insert(pos, source.substr(rng.Below(source.size()), len));
          break;
        case 2:
          source.insert(pos, Fragments()[rng.Below(Fragments().size())]);
          break;
        case 3:
          source[pos] = static_cast<char>(rng.Below(256));
          break;
        default:
          source = source.substr(0, pos) + source.substr(std::min(source.size(), pos + len)) +
                   source.substr(pos, len);
      }
    }
    const absl::StatusCode code = ParseAndRender(source);
    EXPECT_TRUE(IsExpectedFailure(code)) << "status " << static_cast<int>(code);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 120.0 * std::max(1, Iterations(3000) / 3000));
}

TEST(ChatTemplateFuzzTest, PublicRenderMapsEveryFailureToInvalidArgument) {
  Rng rng(99);
  for (int iteration = 0; iteration < 300; ++iteration) {
    std::string source;
    const size_t n = 1 + rng.Below(12);
    for (size_t i = 0; i < n; ++i) source += Fragments()[rng.Below(Fragments().size())];
    absl::StatusOr<std::unique_ptr<ChatTemplate>> tmpl = ChatTemplate::Parse(source);
    if (!tmpl.ok()) {
      EXPECT_EQ(tmpl.status().code(), absl::StatusCode::kInvalidArgument);
      continue;
    }
    absl::StatusOr<std::string> out = (*tmpl)->Render(Context(), 1 << 14);
    if (!out.ok()) {
      EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
    }
  }
}

}  // namespace
}  // namespace orca
