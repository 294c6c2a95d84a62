// A Tokenizer defined by a Hugging Face tokenizer.json with a BPE model (byte-level or
// SentencePiece-style), plus tokenizer_config.json. Immutable after Load() and safe for
// concurrent use.
//
// Encoding follows Hugging Face tokenizers: added tokens are split off the raw text
// first; each remaining piece is normalized, pre-tokenized into words and encoded by the
// BPE model; the post-processor's (or tokenizer_config.json's) BOS/EOS are added on
// request. Deliberate differences: added tokens are always matched on the raw text (also
// those marked "normalized"), NFC normalization is the identity, and bytes that are not
// valid UTF-8 are accepted (as byte tokens or byte-fallback tokens).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "engine/tokenizer/internal/added_tokens.h"
#include "engine/tokenizer/internal/bpe_model.h"
#include "engine/tokenizer/internal/decoder.h"
#include "engine/tokenizer/internal/normalizer.h"
#include "engine/tokenizer/internal/pre_tokenizer.h"
#include "engine/tokenizer/tokenizer.h"

namespace orca::tokenizer_internal {

class HfTokenizer final : public Tokenizer {
 public:
  // Loads `dir`/tokenizer.json and `dir`/tokenizer_config.json (optional). Fails with a
  // Status naming the file: NotFound, InvalidArgument for malformed content,
  // Unimplemented for model types and components orca does not support.
  static absl::StatusOr<std::unique_ptr<Tokenizer>> Load(const std::string& dir);

  std::vector<int32_t> Encode(std::string_view text, bool add_special_tokens) const override;
  std::string Decode(absl::Span<const int32_t> ids, bool skip_special_tokens) const override;
  std::string DecodeBytes(absl::Span<const int32_t> ids) const override;
  int32_t vocab_size() const override { return vocab_size_; }
  std::optional<int32_t> bos_id() const override { return bos_id_; }
  std::optional<int32_t> eos_id() const override { return eos_id_; }
  std::optional<int32_t> TokenToId(std::string_view token) const override;
  std::string IdToToken(int32_t id) const override;
  bool IsSpecial(int32_t id) const override { return special_ids_.contains(id); }
  const std::string& chat_template() const override { return chat_template_; }

 private:
  HfTokenizer(BpeModel model, Normalizer normalizer, PreTokenizer pre_tokenizer, Decoder decoder)
      : model_(std::move(model)),
        normalizer_(std::move(normalizer)),
        pre_tokenizer_(std::move(pre_tokenizer)),
        decoder_(std::move(decoder)) {}
  const std::string* TokenString(int32_t id) const;

  BpeModel model_;
  Normalizer normalizer_;
  PreTokenizer pre_tokenizer_;
  Decoder decoder_;
  AddedTokenMatcher added_matcher_;
  absl::flat_hash_map<std::string, int32_t> added_by_content_;
  absl::flat_hash_map<int32_t, std::string> added_by_id_;
  absl::flat_hash_set<int32_t> special_ids_;
  std::vector<int32_t> prefix_ids_;  // added before the text when add_special_tokens
  std::vector<int32_t> suffix_ids_;  // added after it
  std::optional<int32_t> bos_id_;
  std::optional<int32_t> eos_id_;
  int32_t vocab_size_ = 0;
  std::string chat_template_;
};

}  // namespace orca::tokenizer_internal
