// The BPE model of a tokenizer.json ("model": {"type": "BPE", ...}): vocabulary, ranked
// merges, unknown-token and byte-fallback rules. Immutable after construction and safe
// for concurrent use.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace orca::tokenizer_internal {

class BpeModel {
 public:
  // Builds the model from the "model" object of tokenizer.json. `file` names the file in
  // error messages. Fails on a missing or ill-typed field, a merge that references a
  // token not in the vocabulary, or an unsupported option (dropout is ignored;
  // continuing_subword_prefix and end_of_word_suffix are rejected).
  static absl::StatusOr<BpeModel> FromJson(const nlohmann::json& model, const std::string& file);

  // Appends the ids of `word` to `out`. The word's characters (UTF-8; an invalid byte is
  // a character of its own) start as symbols; characters missing from the vocabulary
  // become byte tokens <0xNN> with byte_fallback, else the unknown token (fused with a
  // preceding unknown token when fuse_unk), else nothing. Merges then apply lowest rank
  // first, leftmost first among equal ranks, as in Hugging Face tokenizers.
  void EncodeWord(std::string_view word, std::vector<int32_t>* out) const;

  std::optional<int32_t> TokenToId(std::string_view token) const;
  // Returns the vocabulary string of `id`, or nullptr when the vocabulary lacks it.
  const std::string* IdToToken(int32_t id) const;
  // Returns one more than the largest id in the vocabulary.
  int32_t vocab_size() const { return static_cast<int32_t>(id_to_token_.size()); }
  bool byte_fallback() const { return byte_fallback_; }

 private:
  struct MergeTarget {
    int32_t rank;
    int32_t merged_id;
  };
  static uint64_t PairKey(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  void ApplyMerges(std::vector<int32_t>* symbols) const;

  absl::flat_hash_map<std::string, int32_t> vocab_;
  std::vector<std::string> id_to_token_;
  std::vector<bool> has_id_;
  absl::flat_hash_map<uint64_t, MergeTarget> merges_;
  std::optional<int32_t> unk_id_;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  std::array<int32_t, 256> byte_ids_{};  // <0xNN> ids, -1 where missing
};

}  // namespace orca::tokenizer_internal
