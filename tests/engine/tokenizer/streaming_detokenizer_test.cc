#include <random>
#include <string>
#include <vector>

#include "engine/tokenizer/internal/unicode.h"
#include "engine/tokenizer/tokenizer.h"
#include "gtest/gtest.h"
#include "tests/engine/tokenizer/test_support.h"

namespace orca {
namespace {

using tokenizer_internal::IsValidUtf8;
using tokenizer_test::CorpusOptions;
using tokenizer_test::MakeCorpus;
using tokenizer_test::TempDir;

// Streams `ids` and checks every increment is valid UTF-8 and the whole equals Decode.
void ExpectStreamsLikeDecode(const Tokenizer& t, const std::vector<int32_t>& ids, bool skip,
                             const std::string& context) {
  StreamingDetokenizer stream(t, skip);
  std::string streamed;
  for (int32_t id : ids) {
    const std::string piece = stream.Push(id);
    ASSERT_TRUE(IsValidUtf8(piece)) << context;
    streamed += piece;
  }
  const std::string tail = stream.Flush();
  ASSERT_TRUE(IsValidUtf8(tail)) << context;
  streamed += tail;
  EXPECT_EQ(streamed, t.Decode(ids, skip)) << context;
}

std::unique_ptr<Tokenizer> Load(const std::string& dir) {
  auto t = Tokenizer::FromDirectory(dir);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? std::move(*t) : nullptr;
}

// The tiny SentencePiece-style tokenizer: byte b is id 3 + b, "▁a" is 265.
std::unique_ptr<Tokenizer> LoadTiny() {
  TempDir dir;
  dir.Write("tokenizer.json", tokenizer_test::TinySentencePieceStyleJson());
  return Load(dir.path());
}

TEST(StreamingDetokenizerTest, HoldsBytesUntilTheCharacterCompletes) {
  auto t = LoadTiny();
  ASSERT_NE(t, nullptr);
  // "日" = E6 97 A5 as byte-fallback tokens (byte b has id 3 + b), then "▁a".
  StreamingDetokenizer stream(*t);
  EXPECT_EQ(stream.Push(1), "");  // BOS, skipped
  EXPECT_EQ(stream.Push(3 + 0xE6), "");
  EXPECT_EQ(stream.Push(3 + 0x97), "");
  EXPECT_EQ(stream.Push(3 + 0xA5), "日");
  EXPECT_EQ(stream.Push(265), " a");
  EXPECT_EQ(stream.Flush(), "");
}

TEST(StreamingDetokenizerTest, FlushReplacesIncompleteBytes) {
  auto t = LoadTiny();
  ASSERT_NE(t, nullptr);
  StreamingDetokenizer stream(*t);
  EXPECT_EQ(stream.Push(265), "a");  // the first ▁ is stripped
  EXPECT_EQ(stream.Push(3 + 0xF0), "");
  EXPECT_EQ(stream.Push(3 + 0x9F), "");
  EXPECT_EQ(stream.Flush(), "\uFFFD");
}

// Bytes that can no longer complete a character are not held: a model repeating a lone
// lead byte streams one U+FFFD per token (before, the whole output waited for Flush).
TEST(StreamingDetokenizerTest, EmitsBytesThatCanNeverCompleteAtOnce) {
  auto t = LoadTiny();
  ASSERT_NE(t, nullptr);
  StreamingDetokenizer stream(*t);
  EXPECT_EQ(stream.Push(3 + 0xE6), "");  // may still become a character
  for (int i = 0; i < 50; ++i) ASSERT_EQ(stream.Push(3 + 0xE6), "\uFFFD") << i;
  EXPECT_EQ(stream.Push(3 + 0x97), "");        // E6 97: still incomplete
  EXPECT_EQ(stream.Push(3 + 0xA5), "日");      // E6 97 A5
  EXPECT_EQ(stream.Push(3 + 0x97), "\uFFFD");  // a stray continuation byte
  EXPECT_EQ(stream.Push(3 + 0xF0), "");
  EXPECT_EQ(stream.Push(265), "\uFFFD a");  // F0 then "▁a": F0 can never complete
  EXPECT_EQ(stream.Flush(), "");
}

// Random byte soup (ASCII, lead and continuation bytes, SentencePiece pieces): after
// every push, what is held back decodes to at most one U+FFFD (one incomplete
// character), and the whole stream equals Decode.
TEST(StreamingDetokenizerTest, HoldsAtMostOneIncompleteCharacter) {
  auto t = LoadTiny();
  ASSERT_NE(t, nullptr);
  const std::vector<int32_t> choices = {3 + 0x41, 3 + 0x97, 3 + 0xA5, 3 + 0xBF, 3 + 0xC3,
                                        3 + 0xA9, 3 + 0xE6, 3 + 0xF0, 3 + 0x9F, 265};
  std::mt19937 rng(17);
  for (int round = 0; round < 50; ++round) {
    StreamingDetokenizer stream(*t);
    std::vector<int32_t> ids;
    std::string streamed;
    for (int i = 0; i < 60; ++i) {
      ids.push_back(choices[rng() % choices.size()]);
      streamed += stream.Push(ids.back());
      ASSERT_TRUE(IsValidUtf8(streamed));
      const std::string whole = t->Decode(ids, true);
      ASSERT_EQ(whole.compare(0, streamed.size(), streamed), 0) << "round " << round;
      const std::string held = whole.substr(streamed.size());
      ASSERT_TRUE(held.empty() || held == "\uFFFD")
          << "round " << round << " step " << i << " holds " << held.size() << " bytes";
    }
    streamed += stream.Flush();
    EXPECT_EQ(streamed, t->Decode(ids, true)) << "round " << round;
  }
}

TEST(StreamingDetokenizerTest, KeepsSentencePieceSpacesAcrossPushes) {
  auto t = LoadTiny();
  ASSERT_NE(t, nullptr);
  const std::vector<int32_t> ids = t->Encode("ab  abcd a", true);
  ExpectStreamsLikeDecode(*t, ids, true, "tiny");
  ExpectStreamsLikeDecode(*t, ids, false, "tiny, specials kept");
  EXPECT_EQ(t->Decode(ids, true), "ab  abcd a");
}

TEST(StreamingDetokenizerTest, MatchesDecodeOnSyntheticByteLevelTokenizer) {
  TempDir dir;
  ASSERT_TRUE(WriteSyntheticTokenizer(dir.path(), 1000).ok());
  auto t = Load(dir.path());
  ASSERT_NE(t, nullptr);
  CorpusOptions options;
  options.special_texts = {"<s>", "</s>"};
  for (const std::string& s : MakeCorpus(11, 600, options)) {
    const std::vector<int32_t> ids = t->Encode(s, true);
    ExpectStreamsLikeDecode(*t, ids, true, s);
    ExpectStreamsLikeDecode(*t, ids, false, s);
  }
}

TEST(StreamingDetokenizerTest, MatchesDecodeOnStories260K) {
  if (!tokenizer_test::Stories260KAvailable()) {
    ORCA_SKIP_OR_FAIL("stories260K not found at " << tokenizer_test::Stories260KDir());
  }
  auto t = Load(tokenizer_test::Stories260KDir());
  ASSERT_NE(t, nullptr);
  // Its 512-token vocabulary spells CJK and emoji with byte-fallback tokens.
  for (const std::string& s : MakeCorpus(12, 600, CorpusOptions{})) {
    const std::vector<int32_t> ids = t->Encode(s, true);
    ExpectStreamsLikeDecode(*t, ids, true, s);
    ExpectStreamsLikeDecode(*t, ids, false, s);
  }
}

// Output decoded after the prompt's last ids keeps the space SentencePiece drops at the
// start of a text: "Once upon a" continues " time", not "time" (the prompt + the
// completion must read as the decoded whole, as with vLLM). Checked against decoding
// prompt + output at once.
TEST(StreamingDetokenizerTest, ContinuesThePromptWithItsLeadingSpace) {
  if (!tokenizer_test::Stories260KAvailable()) {
    ORCA_SKIP_OR_FAIL("stories260K not found at " << tokenizer_test::Stories260KDir());
  }
  auto t = Load(tokenizer_test::Stories260KDir());
  ASSERT_NE(t, nullptr);
  for (const auto& [prompt, output] : std::vector<std::pair<std::string, std::string>>{
           {"Once upon a", " time, there was"}, {"The cat", " sat. 你好 end"}, {"Hi", "!"}}) {
    const std::vector<int32_t> p = t->Encode(prompt, true);
    std::vector<int32_t> all = t->Encode(prompt + output, true);
    ASSERT_TRUE(std::equal(p.begin(), p.end(), all.begin())) << prompt;
    const std::vector<int32_t> out(all.begin() + static_cast<std::ptrdiff_t>(p.size()), all.end());
    StreamingDetokenizer d(*t, true, absl::MakeConstSpan(p).last(std::min<size_t>(p.size(), 6)));
    std::string text;
    for (int32_t id : out) text += d.Push(id);
    text += d.Flush();
    EXPECT_EQ(text, output) << prompt;
    EXPECT_EQ(prompt + text, t->Decode(all, true));
  }
}

TEST(StreamingDetokenizerTest, CanContinueAfterFlush) {
  TempDir dir;
  ASSERT_TRUE(WriteSyntheticTokenizer(dir.path(), 300).ok());
  auto t = Load(dir.path());
  ASSERT_NE(t, nullptr);
  StreamingDetokenizer stream(*t);
  std::string out;
  for (int32_t id : t->Encode("héllo", false)) out += stream.Push(id);
  out += stream.Flush();
  for (int32_t id : t->Encode(" world", false)) out += stream.Push(id);
  out += stream.Flush();
  EXPECT_EQ(out, "héllo world");
}

}  // namespace
}  // namespace orca
