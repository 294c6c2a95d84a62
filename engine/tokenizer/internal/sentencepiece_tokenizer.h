// A Tokenizer over a SentencePiece tokenizer.model, used when a checkpoint has no
// tokenizer.json. orca reads the model itself (sentencepiece_model_proto.h) and encodes
// like libsentencepiece (sentencepiece_bpe.h); only BPE models are supported. Immutable
// after Load() and safe for concurrent use.
//
// Control pieces (<s>, </s>) and the unknown piece are special: their text in the input
// maps to their ids, and each piece of text between them is encoded on its own, as
// libsentencepiece would encode it (bytes that are not UTF-8 become U+FFFD first, so
// such input does not round-trip). BOS/EOS follow tokenizer_config.json, defaulting to
// the model's trainer_spec ids and Llama's convention (BOS yes, EOS no).
//
// Decoding follows SentencePieceProcessor::Decode (U+2581 becomes a space, the leading
// space of the dummy prefix is dropped, byte pieces are reassembled), except that special
// ids are dropped or spelled as their piece (the unknown piece too, rather than " ⁇ "), and
// invalid UTF-8 is repaired once over the whole text, one U+FFFD per maximal ill-formed
// subsequence as in the rest of orca, where libsentencepiece writes one per byte.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "engine/tokenizer/internal/added_tokens.h"
#include "engine/tokenizer/internal/sentencepiece_bpe.h"
#include "engine/tokenizer/internal/tokenizer_config.h"
#include "engine/tokenizer/tokenizer.h"

namespace orca::tokenizer_internal {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  // Loads `dir`/tokenizer.model and `dir`/tokenizer_config.json (optional). Fails with a
  // Status naming the file: NotFound; InvalidArgument for a file that is not a valid
  // SentencePiece model; Unimplemented for model types other than BPE.
  static absl::StatusOr<std::unique_ptr<Tokenizer>> Load(const std::string& dir);

  // Builds the tokenizer from `model`, the contents of tokenizer.model file `file` (named
  // in errors), and `config`. Fails as Load() does.
  static absl::StatusOr<std::unique_ptr<Tokenizer>> Create(std::string_view model,
                                                           const std::string& file,
                                                           const TokenizerConfig& config);

  std::vector<int32_t> Encode(std::string_view text, bool add_special_tokens) const override;
  std::string Decode(absl::Span<const int32_t> ids, bool skip_special_tokens) const override;
  std::string DecodeBytes(absl::Span<const int32_t> ids) const override;
  int32_t vocab_size() const override { return model_.vocab_size(); }
  std::optional<int32_t> bos_id() const override { return bos_id_; }
  std::optional<int32_t> eos_id() const override { return eos_id_; }
  std::optional<int32_t> TokenToId(std::string_view token) const override;
  std::string IdToToken(int32_t id) const override;
  bool IsSpecial(int32_t id) const override { return special_ids_.contains(id); }
  const std::string& chat_template() const override { return chat_template_; }

 private:
  explicit SentencePieceTokenizer(SentencePieceBpe model) : model_(std::move(model)) {}
  // Decode's pieces and bytes before the UTF-8 repair and the denormalizer.
  std::string DecodeRaw(absl::Span<const int32_t> ids, bool skip_special_tokens) const;

  SentencePieceBpe model_;
  AddedTokenMatcher special_matcher_;
  absl::flat_hash_set<int32_t> special_ids_;
  std::optional<int32_t> bos_id_;
  std::optional<int32_t> eos_id_;
  bool add_bos_ = true;
  bool add_eos_ = false;
  std::string chat_template_;
};

}  // namespace orca::tokenizer_internal
