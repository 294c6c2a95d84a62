#include "engine/tokenizer/internal/unicode.h"

#include "engine/tokenizer/internal/byte_level.h"
#include "gtest/gtest.h"

namespace orca::tokenizer_internal {
namespace {

TEST(UnicodeTest, DecodesWellFormedCharacters) {
  EXPECT_EQ(DecodeUtf8("A", 0).code_point, U'A');
  const Utf8Char e = DecodeUtf8("\xC3\xA9", 0);
  EXPECT_TRUE(e.valid);
  EXPECT_EQ(e.code_point, U'é');
  EXPECT_EQ(e.length, 2);
  const Utf8Char emoji = DecodeUtf8("\xF0\x9F\x98\x80", 0);
  EXPECT_EQ(emoji.code_point, 0x1F600u);
  EXPECT_EQ(emoji.length, 4);
}

TEST(UnicodeTest, RejectsIllFormedSequencesOneByteAtATime) {
  for (const char* bad : {"\xFF", "\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xE6\x97",
                          "\x80", "\xF0\x9F\x98"}) {
    const Utf8Char c = DecodeUtf8(bad, 0);
    EXPECT_FALSE(c.valid) << bad;
    EXPECT_EQ(c.length, 1) << bad;
  }
}

TEST(UnicodeTest, ToValidUtf8ReplacesMaximalSubparts) {
  EXPECT_EQ(ToValidUtf8("abc"), "abc");
  EXPECT_EQ(ToValidUtf8("a\xFF"
                        "b"),
            "a\uFFFD"
            "b");
  EXPECT_EQ(ToValidUtf8("\xE6\x97"), "\uFFFD");  // one truncated character
  EXPECT_EQ(ToValidUtf8("\xE6\x97"
                        "x"),
            "\uFFFDx");
  EXPECT_EQ(ToValidUtf8("\xC0\xAF"), "\uFFFD\uFFFD");            // overlong: two subparts
  EXPECT_EQ(ToValidUtf8("\xED\xA0\x80"), "\uFFFD\uFFFD\uFFFD");  // surrogate
  EXPECT_EQ(ToValidUtf8("\xF0\x9F\x98"), "\uFFFD");
  EXPECT_TRUE(IsValidUtf8(ToValidUtf8("\xF0\x80\x80\x80\xC3")));
}

TEST(UnicodeTest, ClassifiesLettersNumbersAndWhitespace) {
  for (char32_t c : {U'a', U'Z', U'é', U'ß', U'Ω', U'Ж', U'日', U'ア', U'한', U'ǅ', U'ª'}) {
    EXPECT_TRUE(IsLetter(c)) << static_cast<uint32_t>(c);
  }
  for (char32_t c : {U'0', U'9', U'٣', U'２', U'²', U'½', U'Ⅻ'}) {
    EXPECT_TRUE(IsNumber(c)) << static_cast<uint32_t>(c);
    EXPECT_FALSE(IsLetter(c)) << static_cast<uint32_t>(c);
  }
  for (char32_t c : {U' ', U'\t', U'\n', U'\r', U'\v', U'\f', char32_t{0x85}, char32_t{0xA0},
                     char32_t{0x2003}, char32_t{0x3000}, char32_t{0x2028}}) {
    EXPECT_TRUE(IsWhitespace(c)) << static_cast<uint32_t>(c);
  }
  for (char32_t c : {U'_', U'!', U'😀', char32_t{0x200B}, char32_t{0xFEFF}, char32_t{0x301}}) {
    EXPECT_FALSE(IsLetter(c) || IsNumber(c) || IsWhitespace(c)) << static_cast<uint32_t>(c);
  }
}

TEST(ByteLevelTest, MapsEveryByteReversibly) {
  EXPECT_EQ(ByteToUnicode(' '), "\xC4\xA0");  // Ġ
  EXPECT_EQ(ByteToUnicode('A'), "A");
  EXPECT_EQ(ByteToUnicode('\n'), "\xC4\x8A");  // Ċ
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  EXPECT_EQ(UnicodeToBytes(BytesToUnicode(all)), all);
  EXPECT_EQ(UnicodeToBytes("<|endoftext|>"), "<|endoftext|>");
  EXPECT_EQ(UnicodeToBytes("\xE2\x96\x81"), std::nullopt);  // not a byte character
}

}  // namespace
}  // namespace orca::tokenizer_internal
