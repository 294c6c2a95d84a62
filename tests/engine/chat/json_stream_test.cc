#include "engine/chat/json_stream.h"

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace orca {
namespace {

using Byte = JsonStreamChecker::Byte;

// What the checker makes of `text`: whether every byte is read and one whole value
// ends it (blanks after it allowed), and the value's significant bytes.
struct Checked {
  bool accepted = false;
  std::string significant;
};

Checked Check(const std::string& text, int max_depth = 64) {
  JsonStreamChecker checker(max_depth);
  Checked out;
  size_t i = 0;
  for (; i < text.size() && !checker.done(); ++i) {
    const Byte b = checker.Push(text[i]);
    if (b == Byte::kBad) return out;
    if (b == Byte::kSignificant) out.significant += text[i];
  }
  for (; i < text.size(); ++i) {
    if (text[i] != ' ' && text[i] != '\t' && text[i] != '\n' && text[i] != '\r') return out;
  }
  out.accepted = checker.done();
  return out;
}

// nlohmann::json::accept is the reference (an independent, strict RFC 8259 parser).
void ExpectAgrees(const std::string& text) {
  const bool want = nlohmann::json::accept(text);
  const Checked got = Check(text);
  ASSERT_EQ(got.accepted, want) << "text: " << text;
  if (want) {
    EXPECT_EQ(nlohmann::json::parse(got.significant), nlohmann::json::parse(text))
        << "blanks dropped from: " << text;
  }
}

TEST(JsonStreamCheckerTest, AgreesWithNlohmannOnHandPickedTexts) {
  const std::vector<std::string> texts = {
      R"({})",
      R"([])",
      R"( { "a" : [ 1 , 2.5e-3 , -0 , true , false , null ] } )",
      R"({"s": "tab\t quote\" slash\/ \u00e9 \ud83d\ude00"})",
      "{\"u\": \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}",
      R"({"a": 01})",
      R"({"a": 1.})",
      R"({"a": .5})",
      R"({"a": 1e})",
      R"({"a": -})",
      R"({"a": +1})",
      R"({"a": 1e+5, "b": 0.0E-0})",
      R"({"a": tru})",
      R"({"a": nul})",
      R"({"a": True})",
      R"({"a": 1,})",
      R"([1,])",
      R"({,})",
      R"({"a" 1})",
      R"({"a":: 1})",
      R"({"a": 1}})",
      R"([1]])",
      R"({"a": [1}])",
      R"({1: 2})",
      R"({"a": "\x"})",
      R"({"a": "\u12"})",
      R"({"a": "\ud83d"})",
      R"({"a": "\ude00"})",
      R"({"a": "\ud83d\u0041"})",
      R"({"a": "\ud83dx"})",
      "{\"a\": \"\x01\"}",
      "{\"a\": \"\x7f\"}",
      "{\"a\": \"\xc0\xaf\"}",
      "{\"a\": \"\xe0\x80\xaf\"}",
      "{\"a\": \"\xed\xa0\x80\"}",
      "{\"a\": \"\xf4\x90\x80\x80\"}",
      "{\"a\": \"\xf5\x80\x80\x80\"}",
      "{\"a\": \"\xc3\"}",
      "{\"a\": \"\x80\"}",
      R"({"a": 1} x)",
      R"({"a": 1} {})",
      R"("s")",
      R"(["a", {"b": [[], {}]}])",
      "\n\t{\r}\n",
      R"({"a": -0.0e00})",
      R"({"a": 12345678901234567890123})",
      R"({"a": 1E400})",
      R"({"a": "a"} )"};
  for (const std::string& t : texts) ExpectAgrees(t);
}

// Mutations of valid JSON (bytes inserted, deleted, replaced from an alphabet of JSON's
// own bytes and UTF-8 pieces) agree with the reference, valid or not.
TEST(JsonStreamCheckerTest, AgreesWithNlohmannOnMutatedTexts) {
  const std::vector<std::string> seeds = {
      R"({"city": "Paris", "days": [1, 2, 3], "unit": {"c": true, "f": null}})",
      R"([{"name": "get_weather", "arguments": {"q": "x;y", "n": -1.5e+2}}])",
      R"({"s": "\u00e9\ud83d\ude00\n", "e": [], "o": {}})",
      "{\"k\": \"\xe2\x82\xac \xf0\x9f\x98\x80\"}", R"({"n": 1e30, "m": [9e-30, 100]})"};
  const std::string alphabet =
      "{}[]\":,\\ \n.-+eE0123456789truefalsnu/bfnrtx\xc3\xa9\xed\xa0\xf0\x80";
  std::mt19937 rng(7);
  int valid = 0, total = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string t = seeds[rng() % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !t.empty(); ++e) {
      const size_t at = rng() % t.size();
      const char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0:
          t.insert(t.begin() + static_cast<std::ptrdiff_t>(at), c);
          break;
        case 1:
          t.erase(at, 1);
          break;
        default:
          t[at] = c;
      }
    }
    ExpectAgrees(t);
    if (HasFatalFailure()) return;
    valid += nlohmann::json::accept(t) ? 1 : 0;
    ++total;
  }
  // Both kinds are well represented.
  EXPECT_GT(valid, total / 20);
  EXPECT_LT(valid, total * 19 / 20);
}

// Every prefix of a valid text is read without a kBad, and the value is done exactly at
// its last byte.
TEST(JsonStreamCheckerTest, ValidTextsAreNeverRefusedEarly) {
  const std::string text = R"({"a": [1, -2.5e3, "x\u00e9", {"b": null}], "c": false})";
  JsonStreamChecker checker(64);
  for (size_t i = 0; i < text.size(); ++i) {
    EXPECT_FALSE(checker.done()) << i;
    EXPECT_NE(checker.Push(text[i]), Byte::kBad) << "byte " << i << " of " << text;
  }
  EXPECT_TRUE(checker.done());
  EXPECT_EQ(checker.Push(' '), Byte::kBad);  // nothing is read after the value
  EXPECT_FALSE(checker.broken());
}

TEST(JsonStreamCheckerTest, NestingIsBounded) {
  EXPECT_TRUE(Check("[[[1]]]", 3).accepted);
  JsonStreamChecker checker(3);
  for (char c : std::string("[{\"a\":[")) EXPECT_NE(checker.Push(c), Byte::kBad);
  EXPECT_EQ(checker.Push('['), Byte::kBad);
  EXPECT_TRUE(checker.broken());
}

TEST(JsonStreamCheckerTest, BlanksBetweenTokensAreInsignificant) {
  EXPECT_EQ(Check(" { \"a b\" : [ 1 , \" x \" ] } ").significant, R"({"a b":[1," x "]})");
  // A number ends at the blank after it: that blank is still insignificant.
  EXPECT_EQ(Check("[1 ,2\n]").significant, "[1,2]");
}

}  // namespace
}  // namespace orca
