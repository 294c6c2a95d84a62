#include "engine/tokenizer/internal/split_pattern.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace orca::tokenizer_internal {
namespace {

std::vector<std::string> Split(SplitPattern p, std::string_view text) {
  std::vector<std::string> out;
  for (std::string_view piece : SplitByPattern(p, text)) out.emplace_back(piece);
  return out;
}

using V = std::vector<std::string>;

TEST(SplitPatternTest, RecognisesOnlyKnownRegexes) {
  for (SplitPattern p : {SplitPattern::kGpt2, SplitPattern::kLlama3, SplitPattern::kQwen2}) {
    EXPECT_EQ(RecognizeSplitPattern(SplitPatternRegex(p)), p);
  }
  EXPECT_EQ(RecognizeSplitPattern(R"(\s+)"), std::nullopt);
  EXPECT_EQ(RecognizeSplitPattern(""), std::nullopt);
}

TEST(SplitPatternTest, Gpt2) {
  const auto p = SplitPattern::kGpt2;
  EXPECT_EQ(Split(p, "Hello world"), (V{"Hello", " world"}));
  EXPECT_EQ(Split(p, "  hi"), (V{" ", " hi"}));
  EXPECT_EQ(Split(p, "a  "), (V{"a", "  "}));
  EXPECT_EQ(Split(p, "I'm here's"), (V{"I", "'m", " here", "'s"}));
  EXPECT_EQ(Split(p, "I'M"), (V{"I", "'", "M"}));  // case-sensitive contractions
  EXPECT_EQ(Split(p, "123abc 45"), (V{"123", "abc", " 45"}));
  EXPECT_EQ(Split(p, "hi!!! ?"), (V{"hi", "!!!", " ?"}));
  EXPECT_EQ(Split(p, "a\n\nb"), (V{"a", "\n", "\n", "b"}));
  EXPECT_EQ(Split(p, "a \tb"), (V{"a", " ", "\t", "b"}));
  EXPECT_EQ(Split(p, "é日本 😀x"), (V{"é日本", " 😀", "x"}));
  EXPECT_EQ(Split(p, ""), V{});
}

TEST(SplitPatternTest, Llama3) {
  const auto p = SplitPattern::kLlama3;
  EXPECT_EQ(Split(p, "Hello world"), (V{"Hello", " world"}));
  EXPECT_EQ(Split(p, "I'M"), (V{"I", "'M"}));  // (?i:...)
  EXPECT_EQ(Split(p, "'hello"), (V{"'hello"}));
  EXPECT_EQ(Split(p, "\thello"), (V{"\thello"}));
  EXPECT_EQ(Split(p, "12345"), (V{"123", "45"}));
  EXPECT_EQ(Split(p, "  hi"), (V{" ", " hi"}));
  EXPECT_EQ(Split(p, "a\n\nb"), (V{"a", "\n\n", "b"}));
  EXPECT_EQ(Split(p, "a \n \n  b"), (V{"a", " \n \n", " ", " b"}));
  EXPECT_EQ(Split(p, "hello!!\n\nx"), (V{"hello", "!!\n\n", "x"}));
  EXPECT_EQ(Split(p, " ?!"), (V{" ?!"}));
  EXPECT_EQ(Split(p, "x  "), (V{"x", "  "}));
}

TEST(SplitPatternTest, Qwen2SplitsDigitsSingly) {
  EXPECT_EQ(Split(SplitPattern::kQwen2, "12345 ab"), (V{"1", "2", "3", "4", "5", " ab"}));
}

TEST(SplitPatternTest, InvalidBytesArePunctuationLike) {
  EXPECT_EQ(Split(SplitPattern::kGpt2, "a\xFF\xFE b"), (V{"a", "\xFF\xFE", " b"}));
  EXPECT_EQ(Split(SplitPattern::kLlama3,
                  "\xFF"
                  "abc"),
            (V{"\xFF"
               "abc"}));
}

}  // namespace
}  // namespace orca::tokenizer_internal
