// WriteSyntheticTokenizer (declared in tokenizer.h): a byte-level BPE tokenizer whose
// merges a tiny trainer learns from a built-in English text, padded with filler merges
// to the requested vocabulary size. Deterministic: the same size gives the same files.
#include <filesystem>
#include <map>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/common/file_util.h"
#include "engine/common/status_macros.h"
#include "engine/tokenizer/internal/byte_level.h"
#include "engine/tokenizer/internal/split_pattern.h"
#include "engine/tokenizer/tokenizer.h"
#include "nlohmann/json.hpp"

namespace orca {
namespace {

using nlohmann::json;
namespace ti = tokenizer_internal;

constexpr int32_t kFirstLearnedId = 259;  // after 256 bytes, <s>, </s>, <unk>

constexpr char kCorpus[] =
    "Once upon a time there was a small town by the sea. Every morning the people of the "
    "town walked down to the harbour to see the boats come in. The children liked to run "
    "along the beach and look for shells, while their parents talked about the weather and "
    "the price of fish. One day a stranger arrived with a large wooden box. Nobody knew "
    "what was inside it, and he would not say. \"It is a machine that answers questions,\" "
    "he finally told the mayor. \"Ask it anything you like.\" The mayor laughed, but she "
    "asked: \"How many ships will come in tomorrow?\" The machine thought for a while and "
    "then printed a number on a long strip of paper. The next day exactly that many ships "
    "arrived, and everyone in the town wanted to ask the machine something. They asked "
    "about the rain and the wind, about their friends and their families, about numbers "
    "like 3, 14, 159 and 2024, and about words they could not spell. The machine answered "
    "every question with patience. After many weeks the stranger packed the box again and "
    "said that it was time for him to travel to another town. The children were sad, but "
    "the mayor thanked him and said that they had learned to think about their questions "
    "more carefully. That evening the whole town watched the sun go down over the water, "
    "and they talked about the machine for many years to come.\n"
    "It's simple: read the text, split it into words, count the pairs, and merge the most "
    "frequent pair again and again until the vocabulary is large enough. We'll see that "
    "it works well; they've tried it and I'm sure you'd like it too.\n";

constexpr char kChatTemplate[] =
    "{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}</s>\n"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}";

struct Vocabulary {
  std::vector<std::string> tokens;  // by id, in the byte-level alphabet
  absl::flat_hash_map<std::string, int32_t> ids;
  std::vector<std::pair<int32_t, int32_t>> merges;

  // Records merge (a, b) and returns the id of a+b, adding it when new.
  int32_t AddMerge(int32_t a, int32_t b) {
    merges.emplace_back(a, b);
    std::string merged = tokens[a] + tokens[b];
    auto [it, inserted] = ids.try_emplace(merged, static_cast<int32_t>(tokens.size()));
    if (inserted) tokens.push_back(std::move(merged));
    return it->second;
  }
};

// Learns merges from kCorpus, most frequent pair first, until every word is one token or
// the vocabulary is full; ties go to the smallest pair of ids.
void LearnMerges(int32_t vocab_size, Vocabulary* vocab) {
  std::map<std::string, int64_t> word_counts;
  for (std::string_view word : ti::SplitByPattern(ti::SplitPattern::kGpt2, kCorpus)) {
    ++word_counts[std::string(word)];
  }
  std::vector<std::pair<std::vector<int32_t>, int64_t>> words;
  for (const auto& [word, count] : word_counts) {
    std::vector<int32_t> symbols;
    for (char c : word) symbols.push_back(static_cast<unsigned char>(c));
    words.emplace_back(std::move(symbols), count);
  }
  while (static_cast<int32_t>(vocab->tokens.size()) < vocab_size) {
    std::map<std::pair<int32_t, int32_t>, int64_t> pair_counts;
    for (const auto& [symbols, count] : words) {
      for (size_t i = 0; i + 1 < symbols.size(); ++i) {
        pair_counts[{symbols[i], symbols[i + 1]}] += count;
      }
    }
    std::pair<int32_t, int32_t> best{-1, -1};
    int64_t best_count = 0;  // any pair: every corpus word ends up one token
    for (const auto& [pair, count] : pair_counts) {
      if (count > best_count) {
        best = pair;
        best_count = count;
      }
    }
    if (best.first < 0) return;
    const int32_t merged = vocab->AddMerge(best.first, best.second);
    for (auto& [symbols, count] : words) {
      std::vector<int32_t> next;
      next.reserve(symbols.size());
      for (size_t i = 0; i < symbols.size(); ++i) {
        if (i + 1 < symbols.size() && symbols[i] == best.first && symbols[i + 1] == best.second) {
          next.push_back(merged);
          ++i;
        } else {
          next.push_back(symbols[i]);
        }
      }
      symbols = std::move(next);
    }
  }
}

// Adds merges of existing tokens with common letters until the vocabulary is full.
void AddFillerMerges(int32_t vocab_size, Vocabulary* vocab) {
  std::vector<int32_t> suffixes;
  for (char c : std::string_view("etaoinshrdlucmfwypvbgkjqxz ")) {
    suffixes.push_back(static_cast<unsigned char>(c));
  }
  for (size_t left = 0;
       left < vocab->tokens.size() && static_cast<int32_t>(vocab->tokens.size()) < vocab_size;
       ++left) {
    if (left >= 256 && left < static_cast<size_t>(kFirstLearnedId)) continue;  // special tokens
    for (int32_t right : suffixes) {
      if (static_cast<int32_t>(vocab->tokens.size()) >= vocab_size) break;
      if (!vocab->ids.contains(vocab->tokens[left] + vocab->tokens[right])) {
        vocab->AddMerge(left, right);
      }
    }
  }
}

json TokenizerJson(const Vocabulary& vocab) {
  json added = json::array();
  const char* specials[] = {"<s>", "</s>", "<unk>"};
  for (int32_t i = 0; i < 3; ++i) {
    added.push_back({{"id", 256 + i},
                     {"content", specials[i]},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  }
  json vocab_json = json::object();
  for (size_t id = 0; id < vocab.tokens.size(); ++id) vocab_json[vocab.tokens[id]] = id;
  json merges = json::array();
  for (const auto& [a, b] : vocab.merges) merges.push_back({vocab.tokens[a], vocab.tokens[b]});
  json bos_piece = {{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}};
  return {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "ByteLevel"},
        {"add_prefix_space", false},
        {"trim_offsets", true},
        {"use_regex", true}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", {bos_piece, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
        {"pair",
         {bos_piece,
          {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
          bos_piece,
          {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
        {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {256}}, {"tokens", {"<s>"}}}}}}}},
      {"decoder",
       {{"type", "ByteLevel"},
        {"add_prefix_space", true},
        {"trim_offsets", true},
        {"use_regex", true}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", false},
        {"vocab", vocab_json},
        {"merges", merges}}},
  };
}

json TokenizerConfigJson() {
  return {{"add_bos_token", true},
          {"add_eos_token", false},
          {"bos_token", "<s>"},
          {"eos_token", "</s>"},
          {"unk_token", "<unk>"},
          {"pad_token", nullptr},
          {"clean_up_tokenization_spaces", false},
          {"model_max_length", 1 << 20},
          {"tokenizer_class", "PreTrainedTokenizerFast"},
          {"chat_template", kChatTemplate}};
}

}  // namespace

absl::Status WriteSyntheticTokenizer(const std::string& dir, int32_t vocab_size) {
  if (vocab_size < kFirstLearnedId) {
    return absl::InvalidArgumentError(absl::StrCat("synthetic tokenizer: vocab_size ", vocab_size,
                                                   " is below ", kFirstLearnedId,
                                                   " (256 bytes + <s>, </s>, <unk>)"));
  }
  Vocabulary vocab;
  for (int b = 0; b < 256; ++b) {
    vocab.tokens.push_back(ti::ByteToUnicode(static_cast<uint8_t>(b)));
  }
  for (const char* special : {"<s>", "</s>", "<unk>"}) vocab.tokens.push_back(special);
  for (int32_t id = 0; id < kFirstLearnedId; ++id) vocab.ids[vocab.tokens[id]] = id;
  LearnMerges(vocab_size, &vocab);
  AddFillerMerges(vocab_size, &vocab);

  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return absl::InternalError(absl::StrCat(dir, ": cannot create directory: ", ec.message()));
  ORCA_RETURN_IF_ERROR(WriteFile(JoinPath(dir, "tokenizer.json"), TokenizerJson(vocab).dump()));
  return WriteFile(JoinPath(dir, "tokenizer_config.json"), TokenizerConfigJson().dump(2));
}

}  // namespace orca
