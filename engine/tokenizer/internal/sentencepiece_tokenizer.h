// A Tokenizer over a SentencePiece tokenizer.model (libsentencepiece), used when a
// checkpoint has no tokenizer.json. Immutable after Load() and safe for concurrent use.
//
// Control pieces (<s>, </s>) and the unknown piece are special: their text in the input
// maps to their ids, and each piece of text between them is encoded by SentencePiece
// on its own. BOS/EOS follow tokenizer_config.json, defaulting to Llama's convention
// (BOS yes, EOS no).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "engine/tokenizer/internal/added_tokens.h"
#include "engine/tokenizer/internal/sentencepiece_bridge.h"
#include "engine/tokenizer/tokenizer.h"

namespace orca::tokenizer_internal {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  // Loads `dir`/tokenizer.model and `dir`/tokenizer_config.json (optional). Fails with a
  // Status naming the file.
  static absl::StatusOr<std::unique_ptr<Tokenizer>> Load(const std::string& dir);

  std::vector<int32_t> Encode(std::string_view text, bool add_special_tokens) const override;
  std::string Decode(absl::Span<const int32_t> ids, bool skip_special_tokens) const override;
  int32_t vocab_size() const override { return sp_->vocab_size(); }
  std::optional<int32_t> bos_id() const override { return bos_id_; }
  std::optional<int32_t> eos_id() const override { return eos_id_; }
  std::optional<int32_t> TokenToId(std::string_view token) const override;
  std::string IdToToken(int32_t id) const override;
  bool IsSpecial(int32_t id) const override { return special_ids_.contains(id); }
  const std::string& chat_template() const override { return chat_template_; }

 private:
  explicit SentencePieceTokenizer(std::unique_ptr<SentencePieceBridge> sp) : sp_(std::move(sp)) {}

  std::unique_ptr<SentencePieceBridge> sp_;
  AddedTokenMatcher special_matcher_;
  absl::flat_hash_set<int32_t> special_ids_;
  std::optional<int32_t> bos_id_;
  std::optional<int32_t> eos_id_;
  bool add_bos_ = true;
  bool add_eos_ = false;
  std::string chat_template_;
};

}  // namespace orca::tokenizer_internal
