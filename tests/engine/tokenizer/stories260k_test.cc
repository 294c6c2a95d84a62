// stories260K's tokenizer.json through orca versus its tokenizer.model through
// libsentencepiece, on a generated corpus.
//
// Like with like: the tokenizer.model's normalizer has remove_extra_whitespaces on (it
// drops leading and trailing spaces and collapses runs of spaces), while the
// tokenizer.json, like Hugging Face's Llama tokenizers, keeps every space. The
// comparison therefore feeds both sides text in which each piece between special
// tokens has no leading, trailing or repeated U+0020. Invalid UTF-8 is left out of the
// comparison (SentencePiece turns it into U+FFFD first, orca keeps the raw bytes) and
// checked for a lossless round trip instead. Special-token text ("<s>") is plain text to
// SentencePiece but a token to orca, so the expected ids come from SentencePiece on each
// piece between special tokens, with the special ids in between.
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_replace.h"
#include "engine/tokenizer/internal/unicode.h"
#include "engine/tokenizer/tokenizer.h"
#include "gtest/gtest.h"
#include "tests/engine/tokenizer/sentencepiece_reference.h"
#include "tests/engine/tokenizer/test_support.h"

namespace orca {
namespace {

using tokenizer_internal::IsValidUtf8;
using tokenizer_internal::ToValidUtf8;
using tokenizer_test::CorpusOptions;
using tokenizer_test::MakeCorpus;
using tokenizer_test::TempDir;

const std::vector<std::string> kSpecials = {"<unk>", "<s>", "</s>"};  // ids 0, 1, 2

// Splits at special-token text, leftmost and longest first; specials become {text, id}.
std::vector<std::pair<std::string, int>> SplitSpecials(const std::string& s) {
  std::vector<std::pair<std::string, int>> out;
  size_t start = 0;
  size_t pos = 0;
  while (pos < s.size()) {
    int found = -1;
    for (int i = 0; i < static_cast<int>(kSpecials.size()); ++i) {
      if (s.compare(pos, kSpecials[i].size(), kSpecials[i]) == 0 &&
          (found < 0 || kSpecials[i].size() > kSpecials[found].size())) {
        found = i;
      }
    }
    if (found < 0) {
      ++pos;
      continue;
    }
    if (pos > start) out.emplace_back(s.substr(start, pos - start), -1);
    out.emplace_back(kSpecials[found], found);
    pos += kSpecials[found].size();
    start = pos;
  }
  if (start < s.size()) out.emplace_back(s.substr(start), -1);
  return out;
}

// SentencePiece's remove_extra_whitespaces. It sees "▁" in the input as a space; so
// does the tokenizer.json (its normalizer turns spaces into "▁"), so "▁" can be spelled
// " " for both.
std::string CollapseSpaces(const std::string& s) {
  std::string out;
  for (char c : absl::StrReplaceAll(s, {{"\xE2\x96\x81", " "}})) {
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out.push_back(c);
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

class Stories260KTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!tokenizer_test::Stories260KAvailable()) {
      ORCA_SKIP_OR_FAIL("stories260K not found at " << tokenizer_test::Stories260KDir());
    }
    auto t = Tokenizer::FromDirectory(tokenizer_test::Stories260KDir());
    ASSERT_TRUE(t.ok()) << t.status();
    tokenizer_ = std::move(*t);
    std::string error;
    sp_ = tokenizer_test::SentencePieceReference::Load(
        tokenizer_test::Stories260KDir() + "/tokenizer.model", &error);
    ASSERT_NE(sp_, nullptr) << error;
  }

  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<tokenizer_test::SentencePieceReference> sp_;
};

TEST_F(Stories260KTest, KnownEncoding) {
  EXPECT_EQ(tokenizer_->Encode("Once upon a time", true),
            (std::vector<int32_t>{1, 403, 407, 261, 378}));
  EXPECT_EQ(tokenizer_->Encode("Once upon a time", false),
            (std::vector<int32_t>{403, 407, 261, 378}));
  EXPECT_EQ(tokenizer_->Decode({1, 403, 407, 261, 378}, true), "Once upon a time");
  EXPECT_EQ(tokenizer_->Decode({1, 403, 407, 261, 378}, false), "<s> Once upon a time");
  EXPECT_EQ(tokenizer_->vocab_size(), 512);
  EXPECT_EQ(tokenizer_->bos_id(), 1);
  EXPECT_EQ(tokenizer_->eos_id(), 2);
  EXPECT_TRUE(tokenizer_->IsSpecial(0));
  EXPECT_TRUE(tokenizer_->IsSpecial(1));
  EXPECT_TRUE(tokenizer_->IsSpecial(2));
  EXPECT_FALSE(tokenizer_->IsSpecial(403));
  EXPECT_EQ(tokenizer_->TokenToId("<0x0A>"), 13);
  EXPECT_EQ(tokenizer_->chat_template(), "");
}

TEST_F(Stories260KTest, SentencePieceBackendAgreesOnKnownEncoding) {
  TempDir dir;
  std::filesystem::copy_file(tokenizer_test::Stories260KDir() + "/tokenizer.model",
                             dir.path() + "/tokenizer.model");
  std::filesystem::copy_file(tokenizer_test::Stories260KDir() + "/tokenizer_config.json",
                             dir.path() + "/tokenizer_config.json");
  auto t = Tokenizer::FromDirectory(dir.path());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->Encode("Once upon a time", true), (std::vector<int32_t>{1, 403, 407, 261, 378}));
  EXPECT_EQ((*t)->Encode("a<s>b", false), tokenizer_->Encode("a<s>b", false));
  EXPECT_EQ((*t)->Decode({1, 403, 407, 261, 378}, true), "Once upon a time");
  EXPECT_EQ((*t)->vocab_size(), 512);
  EXPECT_EQ((*t)->bos_id(), 1);
  EXPECT_EQ((*t)->eos_id(), 2);
  EXPECT_EQ((*t)->TokenToId("<0x0A>"), 13);
  EXPECT_EQ((*t)->TokenToId("no such piece"), std::nullopt);
  EXPECT_EQ((*t)->IdToToken(403), tokenizer_->IdToToken(403));
  EXPECT_TRUE((*t)->IsSpecial(1));
}

TEST_F(Stories260KTest, MatchesSentencePieceOnCorpus) {
  const std::vector<std::string> corpus = MakeCorpus(2024, 3000, CorpusOptions{});
  int compared = 0, with_specials = 0, invalid = 0;
  for (const std::string& raw : corpus) {
    // Round trip on the text as given (orca keeps every space); "▁" decodes as a space.
    if (!tokenizer_test::ContainsAny(raw, kSpecials) &&
        raw.find("\xE2\x96\x81") == std::string::npos) {
      EXPECT_EQ(tokenizer_->Decode(tokenizer_->Encode(raw, true), true), ToValidUtf8(raw)) << raw;
    }
    if (!IsValidUtf8(raw)) {
      ++invalid;
      continue;
    }
    // Like-with-like text for the comparison.
    std::string text;
    for (const auto& [piece, id] : SplitSpecials(raw))
      text += id >= 0 ? piece : CollapseSpaces(piece);
    std::vector<int32_t> expected = {1};
    for (const auto& [piece, id] : SplitSpecials(text)) {
      if (id >= 0) {
        expected.push_back(id);
        continue;
      }
      ASSERT_EQ(piece, CollapseSpaces(piece)) << "splitting changed after collapsing: " << raw;
      for (int sp_id : sp_->Encode(piece)) expected.push_back(sp_id);
    }
    with_specials += tokenizer_test::ContainsAny(text, kSpecials);
    ++compared;
    EXPECT_EQ(tokenizer_->Encode(text, true), expected) << "text: \"" << text << "\"";
  }
  EXPECT_GE(compared, 2000);
  EXPECT_GT(with_specials, 50);
  EXPECT_GT(invalid, 50);
}

}  // namespace
}  // namespace orca
