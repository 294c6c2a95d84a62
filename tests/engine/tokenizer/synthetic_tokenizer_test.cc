#include <chrono>
#include <fstream>
#include <sstream>

#include "engine/tokenizer/internal/unicode.h"
#include "engine/tokenizer/tokenizer.h"
#include "gtest/gtest.h"
#include "tests/engine/tokenizer/test_support.h"

namespace orca {
namespace {

using tokenizer_test::CorpusOptions;
using tokenizer_test::MakeCorpus;
using tokenizer_test::TempDir;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(SyntheticTokenizerTest, HasExactVocabularySizeAndRoundTrips) {
  for (int32_t vocab_size : {259, 260, 300, 1000, 4096, 32000}) {
    TempDir dir;
    const auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(WriteSyntheticTokenizer(dir.path(), vocab_size).ok());
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 5.0) << vocab_size;  // ~0.1 s in a release build
    auto t = Tokenizer::FromDirectory(dir.path());
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ((*t)->vocab_size(), vocab_size);
    EXPECT_EQ((*t)->bos_id(), 256);
    EXPECT_EQ((*t)->eos_id(), 257);
    EXPECT_EQ((*t)->TokenToId("<unk>"), 258);
    EXPECT_EQ((*t)->IdToToken(vocab_size - 1).empty(), false);
    EXPECT_FALSE((*t)->chat_template().empty());
    const std::vector<int32_t> ids = (*t)->Encode("Once upon a time", true);
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(ids[0], 256);
    for (int32_t id : ids) EXPECT_LT(id, vocab_size);
    if (vocab_size >= 1000) {
      EXPECT_LT(ids.size(), 8u) << "merges should shorten English";
    }
    CorpusOptions options;
    options.special_texts = {"<s>", "</s>", "<unk>"};
    for (const std::string& s : MakeCorpus(7, 300, options)) {
      const std::vector<int32_t> encoded = (*t)->Encode(s, false);
      EXPECT_EQ((*t)->Decode(encoded, false), tokenizer_internal::ToValidUtf8(s));
    }
  }
}

TEST(SyntheticTokenizerTest, IsDeterministic) {
  TempDir a, b;
  ASSERT_TRUE(WriteSyntheticTokenizer(a.path(), 2000).ok());
  ASSERT_TRUE(WriteSyntheticTokenizer(b.path(), 2000).ok());
  EXPECT_EQ(ReadAll(a.path() + "/tokenizer.json"), ReadAll(b.path() + "/tokenizer.json"));
  EXPECT_EQ(ReadAll(a.path() + "/tokenizer_config.json"),
            ReadAll(b.path() + "/tokenizer_config.json"));
}

TEST(SyntheticTokenizerTest, RejectsTooSmallVocabulary) {
  TempDir dir;
  EXPECT_EQ(WriteSyntheticTokenizer(dir.path(), 258).code(), absl::StatusCode::kInvalidArgument);
}

TEST(SyntheticTokenizerTest, CreatesMissingDirectory) {
  TempDir dir;
  ASSERT_TRUE(WriteSyntheticTokenizer(dir.path() + "/a/b", 300).ok());
  EXPECT_TRUE(Tokenizer::FromDirectory(dir.path() + "/a/b").ok());
}

// Guards against quadratic behaviour: ~0.05 s in a release build.
TEST(SyntheticTokenizerTest, EncodesMegabytesQuickly) {
  TempDir dir;
  ASSERT_TRUE(WriteSyntheticTokenizer(dir.path(), 32000).ok());
  auto t = Tokenizer::FromDirectory(dir.path());
  ASSERT_TRUE(t.ok()) << t.status();
  std::string text;
  for (const std::string& s : MakeCorpus(3, 20000, CorpusOptions{})) text += s + " ";
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int32_t> ids = (*t)->Encode(text, false);
  EXPECT_EQ((*t)->Decode(ids, false).size(), tokenizer_internal::ToValidUtf8(text).size());
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
}

}  // namespace
}  // namespace orca
