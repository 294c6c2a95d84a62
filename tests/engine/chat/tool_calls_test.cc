#include "engine/chat/tool_calls.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/match.h"

namespace orca {
namespace {

struct Expected {
  std::string content;
  std::vector<std::pair<std::string, std::string>> calls;  // name, arguments
};

// What the deltas of feeding `chunks` one by one add up to.
Expected Stream(ToolCallParser& p, const std::vector<std::string>& chunks) {
  Expected got;
  auto add = [&](const ParsedDelta& d) {
    got.content += d.content;
    for (const ToolCallDelta& c : d.calls) {
      if (!c.name.empty()) {
        EXPECT_EQ(c.index, static_cast<int>(got.calls.size()));
        EXPECT_FALSE(c.id.empty());
        got.calls.emplace_back(c.name, "");
      }
      ASSERT_EQ(c.index + 1, static_cast<int>(got.calls.size()));
      got.calls.back().second += c.arguments;
    }
  };
  for (const std::string& c : chunks) add(p.Feed(c));
  add(p.Finish());
  // The accumulated view agrees with the deltas.
  EXPECT_EQ(p.content(), got.content);
  EXPECT_EQ(p.calls().size(), got.calls.size());
  for (size_t i = 0; i < p.calls().size() && i < got.calls.size(); ++i) {
    EXPECT_EQ(p.calls()[i].name, got.calls[i].first);
    EXPECT_EQ(p.calls()[i].arguments, got.calls[i].second);
  }
  return got;
}

// Feeds `text` whole, byte by byte, and split at every position: all give `want`.
void ExpectParses(ToolCallFormat format, const std::string& text, const Expected& want) {
  auto check = [&](const std::vector<std::string>& chunks, const std::string& how) {
    auto p = MakeToolCallParser(format);
    ASSERT_NE(p, nullptr);
    const Expected got = Stream(*p, chunks);
    EXPECT_EQ(got.content, want.content) << how << " of: " << text;
    EXPECT_EQ(got.calls, want.calls) << how << " of: " << text;
  };
  check({text}, "whole");
  std::vector<std::string> bytes;
  for (char c : text) bytes.emplace_back(1, c);
  check(bytes, "byte by byte");
  for (size_t i = 1; i < text.size(); ++i) {
    check({text.substr(0, i), text.substr(i)}, "split at " + std::to_string(i));
  }
}

TEST(ToolCallsTest, HermesCallsAndContent) {
  ExpectParses(ToolCallFormat::kHermes,
               "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", "
               "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
               {"Let me look.", {{"get_weather", R"({"city":"Paris"})"}}});
  // Two calls, no content; the blank between them is dropped.
  ExpectParses(ToolCallFormat::kHermes,
               "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n"
               "{\"name\": \"b\", \"arguments\": {\"x\": [1, \"}\"]}}\n</tool_call>",
               {"", {{"a", "{}"}, {"b", R"({"x":[1,"}"]})"}}});
  // No call: everything is content, blanks included.
  ExpectParses(ToolCallFormat::kHermes, "Once upon a <tool time.\n",
               {"Once upon a <tool time.\n", {}});
  // An unclosed call at the end still counts when its JSON is whole.
  ExpectParses(ToolCallFormat::kHermes, "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}",
               {"", {{"f", R"({"a":1})"}}});
  // A call that does not parse is content.
  ExpectParses(ToolCallFormat::kHermes, "x<tool_call>{\"name\": 3}</tool_call>",
               {"x<tool_call>{\"name\": 3}</tool_call>", {}});
}

TEST(ToolCallsTest, Llama3Json) {
  ExpectParses(ToolCallFormat::kLlama3Json,
               "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}",
               {"", {{"get_weather", R"({"city":"Oslo"})"}}});
  ExpectParses(ToolCallFormat::kLlama3Json,
               "<|python_tag|>{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", "
               "\"parameters\": {\"q\": \"x;y\"}}",
               {"", {{"a", "{}"}, {"b", R"({"q":"x;y"})"}}});
  ExpectParses(ToolCallFormat::kLlama3Json, "The weather is {fine}.",
               {"The weather is {fine}.", {}});
  ExpectParses(ToolCallFormat::kLlama3Json, "{not json", {"{not json", {}});
}

TEST(ToolCallsTest, Mistral) {
  ExpectParses(ToolCallFormat::kMistral,
               "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"n\": 1}}, {\"name\": \"b\", "
               "\"arguments\": {}}]",
               {"", {{"a", R"({"n":1})"}, {"b", "{}"}}});
  ExpectParses(ToolCallFormat::kMistral,
               "Sure.[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Rome\"}[TOOL_CALLS]b[ARGS]{}",
               {"Sure.", {{"get_weather", R"({"city":"Rome"})"}, {"b", "{}"}}});
  ExpectParses(ToolCallFormat::kMistral, "[TOOL_CALLS oops", {"[TOOL_CALLS oops", {}});
  // What follows a marker and is not a call is content; a later marker still counts
  // (fuzz finding: split and whole parses disagreed).
  ExpectParses(ToolCallFormat::kMistral,
               "[TOOL_CALLS]get_weather\x19[ARGS]{\"city\": \"Rome\"}[TOOL_CALLS]b[ARGS]{}",
               {"[TOOL_CALLS]get_weather\x19[ARGS]{\"city\": \"Rome\"}", {{"b", "{}"}}});
  ExpectParses(ToolCallFormat::kMistral, "[TOOL_CALLS]f[ARGS]7 and [TOOL_CALLS]g[AR",
               {"[TOOL_CALLS]f[ARGS]7 and [TOOL_CALLS]g[AR", {}});
  ExpectParses(ToolCallFormat::kMistral, "[TOOL_CALLS]what?", {"[TOOL_CALLS]what?", {}});
  auto p = MakeToolCallParser(ToolCallFormat::kMistral);
  p->Feed("[TOOL_CALLS]f[ARGS]{}");
  p->Finish();
  ASSERT_EQ(p->calls().size(), 1u);
  EXPECT_EQ(p->calls()[0].id.size(), 9u);  // what Mistral's templates accept
}

TEST(ToolCallsTest, ForcedNamedStreamsArguments) {
  auto p = MakeForcedNamedParser("get_weather");
  ParsedDelta d = p->Feed("{\"ci");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "get_weather");
  EXPECT_TRUE(absl::StartsWith(d.calls[0].id, "call_"));
  EXPECT_EQ(d.calls[0].arguments, "{\"ci");
  d = p->Feed("ty\": \"Lima\"}");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_TRUE(d.calls[0].name.empty());
  EXPECT_EQ(d.calls[0].arguments, "ty\": \"Lima\"}");
  EXPECT_TRUE(p->Finish().empty());
  EXPECT_EQ(p->calls()[0].arguments, R"({"city": "Lima"})");
  EXPECT_EQ(p->content(), "");
}

TEST(ToolCallsTest, ForcedList) {
  const std::string text =
      "[{\"name\": \"a\", \"arguments\": {\"s\": \"]\"}}, {\"name\": \"b\", \"arguments\": {}}]";
  for (size_t i = 0; i <= text.size(); ++i) {
    auto p = MakeForcedListParser();
    const Expected got = Stream(*p, {text.substr(0, i), text.substr(i)});
    EXPECT_EQ(got.content, "");
    EXPECT_EQ(got.calls, (std::vector<std::pair<std::string, std::string>>{{"a", R"({"s":"]"})"},
                                                                           {"b", "{}"}}));
  }
  // Cut short (max_tokens): what came is content, the bracket included.
  auto cut = MakeForcedListParser();
  const Expected partial = Stream(*cut, {"[{\"name\": \"a\", \"argu"});
  EXPECT_EQ(partial.content, "[{\"name\": \"a\", \"argu");
  EXPECT_TRUE(partial.calls.empty());
  // After a complete call, an unfinished one is dropped.
  auto cut2 = MakeForcedListParser();
  const Expected one = Stream(*cut2, {"[{\"name\": \"a\", \"arguments\": {}}, {\"na"});
  EXPECT_EQ(one.content, "");
  EXPECT_EQ(one.calls.size(), 1u);
  // Nothing after the list counts; a part that is not a call is content (fuzz finding:
  // text after the bracket was content when fed in chunks, dropped when whole).
  for (size_t i = 0; i <= 20; ++i) {
    const std::string odd = R"([{"name": 1}, {"name": "b", "arguments": {}}] trailing)";
    auto q = MakeForcedListParser();
    const Expected got = Stream(*q, {odd.substr(0, i), odd.substr(i)});
    EXPECT_EQ(got.content, R"({"name": 1})");
    EXPECT_EQ(got.calls.size(), 1u);
  }
  // The first call is out as soon as it is complete.
  auto p = MakeForcedListParser();
  EXPECT_EQ(p->Feed(text.substr(0, text.find(", {"))).calls.size(), 1u);
}

// Feeds `chunks` to a parser for `format` and returns each Feed's deltas.
std::vector<ParsedDelta> FeedEach(ToolCallParser& p, const std::vector<std::string>& chunks) {
  std::vector<ParsedDelta> out;
  for (const std::string& c : chunks) out.push_back(p.Feed(c));
  out.push_back(p.Finish());
  return out;
}

// A call's id and name go out as soon as its arguments object opens, and its arguments
// as they are written (blanks between tokens dropped), in every format.
TEST(ToolCallsTest, ArgumentsStreamAsTheyAreWritten) {
  struct Case {
    std::unique_ptr<ToolCallParser> parser;
    std::string opening;  // up to and into the arguments
    std::string content;  // what the opening's delta has as content
  };
  Case cases[] = {
      {MakeToolCallParser(ToolCallFormat::kHermes),
       "Checking.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"ci", "Checking."},
      {MakeToolCallParser(ToolCallFormat::kLlama3Json),
       "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"ci", ""},
      {MakeToolCallParser(ToolCallFormat::kMistral),
       "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"ci", ""},
      {MakeToolCallParser(ToolCallFormat::kMistral), "Sure.[TOOL_CALLS]get_weather[ARGS]{\"ci",
       "Sure."},
      {MakeForcedListParser(), "[{\"name\": \"get_weather\", \"arguments\": {\"ci", ""},
  };
  for (Case& c : cases) {
    SCOPED_TRACE(c.opening);
    const std::vector<ParsedDelta> d =
        FeedEach(*c.parser, {c.opening, "ty\": \"Paris\", \"days\": [1,", " 2]}", "}"});
    EXPECT_EQ(d[0].content, c.content);
    ASSERT_EQ(d[0].calls.size(), 1u);
    EXPECT_FALSE(d[0].calls[0].id.empty());
    EXPECT_EQ(d[0].calls[0].name, "get_weather");
    EXPECT_EQ(d[0].calls[0].arguments, "{\"ci");
    ASSERT_EQ(d[1].calls.size(), 1u);
    EXPECT_TRUE(d[1].calls[0].id.empty());
    EXPECT_EQ(d[1].calls[0].arguments, "ty\":\"Paris\",\"days\":[1,");
    ASSERT_EQ(d[2].calls.size(), 1u);
    EXPECT_EQ(d[2].calls[0].arguments, "2]}");
    ASSERT_EQ(c.parser->calls().size(), 1u);
    EXPECT_EQ(c.parser->calls()[0].arguments, R"({"city":"Paris","days":[1,2]})");
    EXPECT_TRUE(c.parser->calls()[0].complete);
  }
}

// Whether the calls `text` gives in `format` are complete, one flag per call.
std::vector<bool> Completeness(ToolCallFormat format, const std::string& text) {
  auto p = format == ToolCallFormat::kNone ? MakeForcedListParser() : MakeToolCallParser(format);
  p->Feed(text);
  p->Finish();
  std::vector<bool> out;
  for (const ToolCall& c : p->calls()) out.push_back(c.complete);
  return out;
}

// A call that breaks off keeps the valid prefix of its arguments and is incomplete;
// the rest of its markup is dropped; chunking changes nothing.
TEST(ToolCallsTest, ACallThatBreaksOffKeepsItsValidPrefix) {
  const std::string bad =
      "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": tru x}}</tool_call>Done.";
  ExpectParses(ToolCallFormat::kHermes, bad, {"Done.", {{"f", R"({"a":tru)"}}});
  EXPECT_EQ(Completeness(ToolCallFormat::kHermes, bad), std::vector<bool>{false});
  // Cut short by max_tokens.
  const std::string cut = "{\"name\": \"f\", \"parameters\": {\"q\": \"x";
  ExpectParses(ToolCallFormat::kLlama3Json, cut, {"", {{"f", R"({"q":"x)"}}});
  EXPECT_EQ(Completeness(ToolCallFormat::kLlama3Json, cut), std::vector<bool>{false});
  const std::string list =
      "[{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {\"x\": [1, 2";
  EXPECT_EQ(Completeness(ToolCallFormat::kNone, list), (std::vector<bool>{true, false}));
  // A number no double holds breaks the call at the byte after it, as nlohmann refuses it.
  ExpectParses(ToolCallFormat::kMistral, "[TOOL_CALLS]f[ARGS]{\"n\": 1e400}[TOOL_CALLS]g[ARGS]{}",
               {"", {{"f", R"({"n":1e400)"}}});
  // Nesting past kMaxToolJsonDepth breaks it too.
  const std::string deep =
      "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": " + std::string(kMaxToolJsonDepth, '[') +
      "}}</tool_call>";
  ExpectParses(ToolCallFormat::kHermes, deep,
               {"", {{"f", "{\"a\":" + std::string(kMaxToolJsonDepth - 1, '[')}}});
}

// Calls not written name-first with an arguments object are read whole, as before;
// members after the arguments are not read.
TEST(ToolCallsTest, OtherCallShapesAreReadWhole) {
  const std::string swapped = "<tool_call>{\"arguments\": {\"a\": 1}, \"name\": \"f\"}</tool_call>";
  ExpectParses(ToolCallFormat::kHermes, swapped, {"", {{"f", R"({"a":1})"}}});
  auto p = MakeToolCallParser(ToolCallFormat::kHermes);
  EXPECT_TRUE(p->Feed(swapped.substr(0, swapped.find("</"))).calls.empty());
  ExpectParses(ToolCallFormat::kHermes,
               "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1}\"}</tool_call>",
               {"", {{"f", R"({"a":1})"}}});
  ExpectParses(ToolCallFormat::kHermes,
               "<tool_call>{\"name\": \"f\", \"arguments\": {}, \"id\": 7}</tool_call>ok",
               {"ok", {{"f", "{}"}}});
  // Llama 3: what follows a streamed call and is not one is content.
  ExpectParses(ToolCallFormat::kLlama3Json, "{\"name\": \"f\", \"parameters\": {}, \"x\": 1}",
               {", \"x\": 1}", {{"f", "{}"}}});
}

TEST(ToolCallsTest, DetectsTheFormatFromTheTemplate) {
  EXPECT_EQ(DetectToolCallFormat("{{ '<tool_call>' }}"), ToolCallFormat::kHermes);
  EXPECT_EQ(DetectToolCallFormat("{{ '[TOOL_CALLS]' }}"), ToolCallFormat::kMistral);
  EXPECT_EQ(DetectToolCallFormat("{{ '<|python_tag|>' }}"), ToolCallFormat::kLlama3Json);
  EXPECT_EQ(DetectToolCallFormat("{{ messages }}"), ToolCallFormat::kNone);
}

// The real templates of tests/engine/chat/testdata name their model's format.
TEST(ToolCallsTest, DetectsTheFormatsOfRealTemplates) {
  const std::pair<const char*, ToolCallFormat> cases[] = {
      {"hermes_tool_use.jinja", ToolCallFormat::kHermes},
      {"qwen25_instruct.jinja", ToolCallFormat::kHermes},
      {"llama31_instruct.jinja", ToolCallFormat::kLlama3Json},
      {"llama32_instruct.jinja", ToolCallFormat::kLlama3Json},
      {"mistral_7b_instruct_v03.jinja", ToolCallFormat::kMistral},
      {"mistral_nemo_instruct_2407.jinja", ToolCallFormat::kMistral},
      {"functionary_medium_v31.jinja", ToolCallFormat::kNone},  // its own format
      {"zephyr_7b_beta.jinja", ToolCallFormat::kNone},
  };
  for (const auto& [file, format] : cases) {
    std::ifstream in(std::string("tests/engine/chat/testdata/") + file);
    ASSERT_TRUE(in) << file << " (run from the source directory)";
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(DetectToolCallFormat(text.str()), format) << file;
  }
}

TEST(ToolCallsTest, JsonContainerEnd) {
  EXPECT_EQ(JsonContainerEnd(R"( {"a": "}\"}"} x)", 0), 14u);
  EXPECT_EQ(JsonContainerEnd(R"({"a": [1, 2)", 0), std::string_view::npos);
  EXPECT_EQ(JsonContainerEnd("x{}", 0), std::string_view::npos);
}

}  // namespace
}  // namespace orca
