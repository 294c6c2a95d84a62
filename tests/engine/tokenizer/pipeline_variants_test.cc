// tokenizer.json layouts other than stories260K's and GPT-2's: Llama-3/Qwen2 style
// (Split regex + ByteLevel without regex, ignore_merges) and Metaspace pre-tokenizer.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/tokenizer/internal/split_pattern.h"
#include "engine/tokenizer/internal/unicode.h"
#include "engine/tokenizer/tokenizer.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/engine/tokenizer/test_support.h"

namespace orca {
namespace {

using nlohmann::json;
using tokenizer_test::CorpusOptions;
using tokenizer_test::MakeCorpus;
using tokenizer_test::TempDir;

json ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

// Rewrites the synthetic tokenizer as Llama-3 lays out its tokenizer.json.
void MakeLlama3Style(const TempDir& dir, tokenizer_internal::SplitPattern pattern) {
  ASSERT_TRUE(WriteSyntheticTokenizer(dir.path(), 3000).ok());
  json j = ReadJson(dir.path() + "/tokenizer.json");
  j["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"},
         {"pattern", {{"Regex", std::string(tokenizer_internal::SplitPatternRegex(pattern))}}},
         {"behavior", "Isolated"},
         {"invert", false}},
        {{"type", "ByteLevel"},
         {"add_prefix_space", false},
         {"trim_offsets", true},
         {"use_regex", false}}}}};
  j["post_processor"] = {
      {"type", "Sequence"},
      {"processors", {{{"type", "ByteLevel"}, {"trim_offsets", false}}, j["post_processor"]}}};
  j["model"]["ignore_merges"] = true;
  dir.Write("tokenizer.json", j.dump());
  dir.Write("tokenizer_config.json", R"({"bos_token": "<s>", "eos_token": "</s>"})");
}

TEST(PipelineVariantsTest, Llama3StyleSplitsDigitsInThrees) {
  TempDir dir;
  MakeLlama3Style(dir, tokenizer_internal::SplitPattern::kLlama3);
  auto t = Tokenizer::FromDirectory(dir.path());
  ASSERT_TRUE(t.ok()) << t.status();
  // BOS comes from the template inside the Sequence post-processor.
  const std::vector<int32_t> ids = (*t)->Encode("1234567", true);
  ASSERT_GE(ids.size(), 4u);
  EXPECT_EQ(ids[0], 256);
  // No token crosses the 123|456|7 boundaries.
  std::string joined;
  for (size_t i = 1; i < ids.size(); ++i) {
    const std::string piece = (*t)->Decode({ids[i]}, false);
    ASSERT_FALSE(piece.empty());
    EXPECT_EQ(joined.size() / 3, (joined.size() + piece.size() - 1) / 3) << piece;
    joined += piece;
  }
  EXPECT_EQ(joined, "1234567");
  CorpusOptions options;
  options.special_texts = {};
  for (const std::string& s : MakeCorpus(5, 400, options)) {
    EXPECT_EQ((*t)->Decode((*t)->Encode(s, true), true), tokenizer_internal::ToValidUtf8(s));
  }
}

TEST(PipelineVariantsTest, Qwen2StyleRoundTrips) {
  TempDir dir;
  MakeLlama3Style(dir, tokenizer_internal::SplitPattern::kQwen2);
  auto t = Tokenizer::FromDirectory(dir.path());
  ASSERT_TRUE(t.ok()) << t.status();
  CorpusOptions options;
  options.special_texts = {};
  for (const std::string& s : MakeCorpus(6, 400, options)) {
    EXPECT_EQ((*t)->Decode((*t)->Encode(s, false), false), tokenizer_internal::ToValidUtf8(s));
  }
}

TEST(PipelineVariantsTest, MetaspacePreTokenizerAndDecoder) {
  json j = json::parse(tokenizer_test::TinySentencePieceStyleJson());
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {
      {"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "first"}, {"split", false}};
  j["decoder"] = {{"type", "Sequence"},
                  {"decoders",
                   {{{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "first"}},
                    {{"type", "ByteFallback"}},
                    {{"type", "Fuse"}}}}};
  TempDir dir;
  dir.Write("tokenizer.json", j.dump());
  auto t = Tokenizer::FromDirectory(dir.path());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->Encode("abcd ab", false), (std::vector<int32_t>{269, 267}));
  // prepend_scheme "first": text after a special token gets no ▁.
  EXPECT_EQ((*t)->Encode("a</s>ab", false), (std::vector<int32_t>{265, 2, 266}));
  EXPECT_EQ((*t)->Decode({269, 267}, true), "abcd ab");
  EXPECT_EQ((*t)->Decode((*t)->Encode("ab\tcd é", true), true), "ab\tcd é");
  // As in Hugging Face, the first token loses all its ▁, so a leading space is lost.
  EXPECT_EQ((*t)->Decode((*t)->Encode(" ab", true), true), "ab");

  j["pre_tokenizer"]["split"] = true;
  j["pre_tokenizer"]["prepend_scheme"] = "always";
  dir.Write("tokenizer.json", j.dump());
  t = Tokenizer::FromDirectory(dir.path());
  ASSERT_TRUE(t.ok()) << t.status();
  // split: "▁ab" and "▁cd" are separate words, so no "▁abcd".
  EXPECT_EQ((*t)->Encode("ab cd", false), (std::vector<int32_t>{267, 259, 268}));
  EXPECT_EQ((*t)->Encode("a</s>ab", false), (std::vector<int32_t>{265, 2, 267}));
}

}  // namespace
}  // namespace orca
