// Every Jinja2 feature case in testdata/feature_cases.txt, rendered by orca and by
// Jinja2 (configured as transformers does): outputs must match byte for byte and errors
// must be errors in both.
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/engine/chat/reference.h"

namespace orca::chat_test {
namespace {

// Parsed keeping the keys' order (e.g. "d" is not sorted), as a request body is.
nlohmann::ordered_json FeatureContext() {
  return nlohmann::ordered_json::parse(R"json({
    "messages": [
      {"role": "system", "content": "You are helpful."},
      {"role": "user", "content": "Hello, wörld! 👋"},
      {"role": "assistant", "content": "  Hi there  "},
      {"role": "user", "content": "Bye"}
    ],
    "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>", "tools": null,
    "s": "Hello World", "u": "héllo wörld ÄÖÜ ß Σ", "e": "", "n": 42, "neg": -7,
    "f": 3.14159, "big": 1e20, "t": true, "fl": false, "z": null,
    "l": [3, 1, 2], "sl": ["b", "A", "c", "a"],
    "d": {"b": 1, "a": [1, 2], "c": {"x": "y"}},
    "objs": [{"name": "x", "v": 2, "tags": ["a"]}, {"name": "y", "v": 1},
             {"name": "Z", "v": 3, "tags": []}],
    "nested": {"a": {"b": {"c": [1, {"d": "deep"}]}}},
    "ws": "  \t spaced \n ", "quote": "it's \"quoted\" \\ back",
    "multi": "line1\nline2\r\nline3"
  })json");
}

std::vector<RenderCase> FeatureCases() {
  const std::string text = ReadTestFile("testdata/feature_cases.txt");
  const std::string separator = "\n%%%%\n";
  std::vector<RenderCase> cases;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(separator, start);
    if (end == std::string::npos) end = text.size();
    std::string source = text.substr(start, end - start);
    if (end == text.size() && !source.empty() && source.back() == '\n') source.pop_back();
    RenderCase c;
    c.name = "feature_cases.txt#" + std::to_string(cases.size() + 1);
    c.source = std::move(source);
    c.context = FeatureContext();
    cases.push_back(std::move(c));
    start = end + separator.size();
  }
  return cases;
}

TEST(ChatTemplateFeatureTest, MatchesJinja2) {
  const std::vector<RenderCase> cases = FeatureCases();
  ASSERT_GT(cases.size(), 150u) << "testdata/feature_cases.txt not found or truncated";
  const Comparison result = CompareWithJinja2(cases);
  if (!result.available) {
    if (InCi()) FAIL() << result.why;
    GTEST_SKIP() << result.why;
  }
  std::cout << "[ features ] " << result.matched << "/" << cases.size() << " cases match Jinja2 ("
            << result.errors << " are errors in both)" << std::endl;
}

// A chat request's objects keep the client's key order into the template, as in
// transformers (json.loads gives dicts in document order): `tojson`, `.items()`,
// `.keys()` and iteration over a dict all follow it, nothing is sorted.
TEST(ChatTemplateFeatureTest, DictOrderFollowsTheJsonTextAsInJinja2) {
  const nlohmann::ordered_json context = nlohmann::ordered_json::parse(R"json({
    "tools": [{"type": "function", "function": {"name": "get_weather",
      "description": "Current weather", "parameters": {"type": "object",
      "properties": {"unit": {"type": "string", "enum": ["c", "f"]}, "city": {"type": "string"}},
      "required": ["city"]}}}],
    "d": {"zeta": 1, "alpha": {"y": 2, "x": 3}, "mid": [{"b": 1, "a": 2}], "zeta": 4},
    "messages": [{"role": "user", "name": "bob", "content": "hi"},
                 {"content": "yo", "role": "assistant"}]
  })json");
  const std::vector<RenderCase> cases = {
      {"tools_tojson", "{{ tools | tojson }}", context},
      {"tools_tojson_indent", "{{ tools[0].function | tojson(indent=2) }}", context},
      {"dict_items", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", context},
      {"message_items",
       "{% for m in messages %}{% for k, v in m.items() %}{{ k }}:{{ v }} {% endfor %}|"
       "{% endfor %}",
       context},
      {"keys_values_iter",
       "{{ d.keys() | list }} {{ d.values() | list }} {% for k in d.alpha %}{{ k }}{% endfor %}"
       " {{ d }} {{ d.mid[0] | dictsort }}",
       context},
  };
  const Comparison result = CompareWithJinja2(cases);
  if (!result.available) {
    if (InCi()) FAIL() << result.why;
    GTEST_SKIP() << result.why;
  }
  EXPECT_EQ(result.compared, static_cast<int>(cases.size()));
  EXPECT_EQ(result.matched, result.compared);
  EXPECT_EQ(result.errors, 0);
}

}  // namespace
}  // namespace orca::chat_test

namespace orca::chat_test {
namespace {

// Random expressions over the feature context, compared with Jinja2. Python integers
// are unbounded (orca's are 64-bit) and Jinja2 prints generators and methods with their
// addresses, so cases that depend on either are left out of the comparison.
class ExpressionGenerator {
 public:
  explicit ExpressionGenerator(uint64_t seed) : state_(seed) {}

  std::string Template() {
    switch (Below(6)) {
      case 0:
        return "{% for v in " + Expr(2) + " %}{{ v }},{% else %}none{% endfor %}";
      case 1:
        return "{% if " + Expr(2) + " %}T{% else %}F{% endif %}";
      default:
        return "{{ " + Expr(3) + " }}";
    }
  }

 private:
  uint64_t Next() {
    state_ += 0x9E3779B97F4A7C15ull;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  size_t Below(size_t n) { return static_cast<size_t>(Next() % n); }
  template <size_t N>
  const char* Pick(const char* const (&items)[N]) {
    return items[Below(N)];
  }

  std::string Atom() {
    static const char* const kAtoms[] = {"s",
                                         "u",
                                         "e",
                                         "n",
                                         "neg",
                                         "f",
                                         "big",
                                         "t",
                                         "fl",
                                         "z",
                                         "l",
                                         "sl",
                                         "d",
                                         "objs",
                                         "nested",
                                         "missing",
                                         "messages",
                                         "ws",
                                         "quote",
                                         "multi",
                                         "0",
                                         "1",
                                         "-1",
                                         "2.5",
                                         "'a'",
                                         "\"b c\"",
                                         "''",
                                         "none",
                                         "true",
                                         "false",
                                         "[1, 2]",
                                         "['x', 'y']",
                                         "{'k': 1, 'a': 'z'}",
                                         "(1, 2)",
                                         "'Hello World'",
                                         "3",
                                         "0.0",
                                         "'42'",
                                         "' 7 '",
                                         "'é'",
                                         "[]",
                                         "{}"};
    return Pick(kAtoms);
  }

  std::string Expr(int depth) {
    if (depth <= 0) return Atom();
    static const char* const kBinary[] = {"+",  "-",  "*", "/",  "//", "%",  "~",  "and",   "or",
                                          "==", "!=", "<", "<=", ">",  ">=", "in", "not in"};
    static const char* const kAttrs[] = {"a",    "b",     "c",    "x",      "role", "content",
                                         "name", "items", "real", "length", "v",    "0"};
    static const char* const kIndexes[] = {"0",  "-1",   "1",  "'a'", "'role'",
                                           "1:", "::-1", ":2", "-2:", "'content'"};
    static const char* const kFilters[] = {"trim",
                                           "upper",
                                           "lower",
                                           "length",
                                           "first",
                                           "last",
                                           "list",
                                           "join",
                                           "join(',')",
                                           "string",
                                           "int",
                                           "float",
                                           "abs",
                                           "default('d')",
                                           "tojson",
                                           "reverse|list",
                                           "sort",
                                           "unique|list",
                                           "title",
                                           "capitalize",
                                           "round",
                                           "sum",
                                           "min",
                                           "max",
                                           "items|list",
                                           "dictsort",
                                           "map('string')|list",
                                           "select|list",
                                           "reject|list",
                                           "batch(2)|list",
                                           "replace('l', 'L')",
                                           "indent(2)",
                                           "wordcount",
                                           "center(9)",
                                           "tojson(indent=1)",
                                           "d(true)",
                                           "selectattr('v')|list",
                                           "map(attribute='name')|list",
                                           "count",
                                           "e",
                                           "list|length",
                                           "sort(reverse=true)",
                                           "tojson(sort_keys=true)",
                                           "string|length"};
    static const char* const kTests[] = {
        "defined",       "undefined", "none",      "string",   "number",     "integer",
        "float",         "mapping",   "iterable",  "sequence", "odd",        "even",
        "divisibleby 2", "eq 1",      "in [1, 2]", "true",     "false",      "boolean",
        "callable",      "lower",     "upper",     "not none", "not defined"};
    static const char* const kMethods[] = {
        "strip()",       "split()",    "upper()",    "startswith('H')", "replace('o', '0')",
        "find('l')",     "count('l')", "get('a')",   "items()|list",    "keys()|list",
        "values()|list", "title()",    "split(',')", "lstrip()",        "endswith('d')",
        "index(1)",      "format(1)",  "isdigit()"};
    const int d = depth - 1;
    switch (Below(9)) {
      case 0:
        return "(" + Expr(d) + " " + Pick(kBinary) + " " + Expr(d) + ")";
      case 1:
        return std::string(Below(2) == 0 ? "(not " : "(-") + Expr(d) + ")";
      case 2:
        return Expr(d) + "." + Pick(kAttrs);
      case 3:
        return Expr(d) + "[" + Pick(kIndexes) + "]";
      case 4:
        return "(" + Expr(d) + "|" + Pick(kFilters) + ")";
      case 5:
        return "(" + Expr(d) + " is " + Pick(kTests) + ")";
      case 6:
        return "(" + Expr(d) + " if " + Expr(d) + " else " + Expr(d) + ")";
      case 7:
        return Expr(d) + "." + Pick(kMethods);
      default:
        return Atom();
    }
  }

  uint64_t state_;
};

// ORCA_CHAT_RANDOM_SEED and ORCA_CHAT_RANDOM_CASES widen the search (e.g. nightly).
uint64_t EnvOr(const char* name, uint64_t fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::strtoull(value, nullptr, 10) : fallback;
}

TEST(ChatTemplateFeatureTest, RandomExpressionsMatchJinja2) {
  ExpressionGenerator generator(EnvOr("ORCA_CHAT_RANDOM_SEED", 20240726));
  const uint64_t count = EnvOr("ORCA_CHAT_RANDOM_CASES", 3000);
  std::vector<RenderCase> all;
  for (uint64_t i = 0; i < count; ++i) {
    RenderCase c;
    c.source = generator.Template();
    c.name = "random#" + std::to_string(i) + " " + c.source;
    c.context = FeatureContext();
    all.push_back(std::move(c));
  }
  const Comparison result =
      CompareWithJinja2(all, [](const RenderResult& want, const RenderResult& got) {
        const bool address = want.ok && want.output.find(" at 0x") != std::string::npos;
        const bool big_int = !got.ok && got.error.find("integer overflow") != std::string::npos;
        return address || big_int;
      });
  if (!result.available) {
    if (InCi()) FAIL() << result.why;
    GTEST_SKIP() << result.why;
  }
  std::cout << "[ random ] " << result.matched << "/" << result.compared
            << " random expressions match Jinja2 (" << result.errors << " are errors in both; "
            << all.size() - result.compared << " left out)" << std::endl;
}

}  // namespace
}  // namespace orca::chat_test

namespace orca::chat_test {
namespace {

// Random layouts of text, tags and whitespace control ({%- -%} {%+ +%} {{- -}} {#- -#},
// raw blocks, nested blocks), which exercise trim_blocks and lstrip_blocks.
class LayoutGenerator {
 public:
  explicit LayoutGenerator(uint64_t seed) : state_(seed) {}

  std::string Template() { return Body(3); }

 private:
  uint64_t Next() {
    state_ += 0x9E3779B97F4A7C15ull;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  size_t Below(size_t n) { return static_cast<size_t>(Next() % n); }

  std::string Text() {
    static const char* const kTexts[] = {"",    " ",      "  ",     "\t",   "\n",  "\n  ", "a",
                                         "b c", " \n\t ", "\u3000", "\r\n", "x\n", "\n\n", "  y  "};
    return kTexts[Below(sizeof(kTexts) / sizeof(kTexts[0]))];
  }
  std::string Open(const char* tag) {
    static const char* const kLeft[] = {"", "", "-", "+"};
    return std::string(tag) + kLeft[Below(4)] + (Below(2) == 0 ? " " : "  ");
  }
  std::string Close(const char* tag) {
    static const char* const kRight[] = {"", "", "-", "+"};
    return std::string(Below(2) == 0 ? " " : "\n") + kRight[Below(4)] + tag;
  }
  std::string Block(const std::string& body) { return Open("{%") + body + Close("%}"); }

  std::string Body(int depth) {
    std::string out;
    const size_t n = 1 + Below(5);
    for (size_t i = 0; i < n; ++i) {
      out += Text();
      switch (Below(depth > 0 ? 8 : 4)) {
        case 0:
          out += std::string("{{") + (Below(2) == 0 ? "-" : "") + " s " +
                 (Below(2) == 0 ? "-" : "") + "}}";
          break;
        case 1:
          out += std::string("{#") + (Below(3) == 0 ? "-" : "") + " note " +
                 (Below(3) == 0 ? "-" : "") + "#}";
          break;
        case 2:
          out += Block("set v = 1");
          break;
        case 3:
          out += Text();
          break;
        case 4:
          out += Block("if t") + Body(depth - 1) + Block("else") + Body(depth - 1) + Block("endif");
          break;
        case 5:
          out += Block("for i in l") + Body(depth - 1) + Block("endfor");
          break;
        case 6:
          out += Block("if fl") + Body(depth - 1) + Block("endif");
          break;
        default:
          out += Block("raw") + Text() + "{{ raw }}" + Text() + Block("endraw");
      }
      out += Text();
    }
    return out;
  }

  uint64_t state_;
};

TEST(ChatTemplateFeatureTest, RandomLayoutsMatchJinja2) {
  LayoutGenerator generator(EnvOr("ORCA_CHAT_RANDOM_SEED", 20240726));
  const uint64_t count = EnvOr("ORCA_CHAT_RANDOM_CASES", 3000) / 2;
  std::vector<RenderCase> cases;
  for (uint64_t i = 0; i < count; ++i) {
    RenderCase c;
    c.source = generator.Template();
    c.name = "layout#" + std::to_string(i);
    c.context = FeatureContext();
    cases.push_back(std::move(c));
  }
  const Comparison result = CompareWithJinja2(cases);
  if (!result.available) {
    if (InCi()) FAIL() << result.why;
    GTEST_SKIP() << result.why;
  }
  std::cout << "[ layouts ] " << result.matched << "/" << cases.size()
            << " random layouts match Jinja2 (" << result.errors << " are errors in both)"
            << std::endl;
}

}  // namespace
}  // namespace orca::chat_test
