// The vocabulary and BPE segmentation of a SentencePiece model (tokenizer.model with
// model_type BPE), following libsentencepiece's bpe::Model and the id post-processing of
// SentencePieceProcessor::Encode. Immutable after Create() and thread-safe.
//
// Why not BpeModel (bpe_model.h): Hugging Face BPE merges a ranked list of id pairs within
// pre-tokenized words, while SentencePiece merges any two adjacent symbols, over the whole
// normalized text, whose concatenation is a piece, the highest-scoring first. The symbols
// may be characters missing from the vocabulary, user-defined pieces never merge, and
// UNUSED pieces take part in merges but are split back into their parts.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "engine/tokenizer/internal/sentencepiece_model_proto.h"
#include "engine/tokenizer/internal/sentencepiece_normalizer.h"

namespace orca::tokenizer_internal {

class SentencePieceBpe {
 public:
  using PieceType = SentencePieceModelProto::PieceType;

  // Builds the model from `proto` (moved from). Fails, naming `file`: Unimplemented for a
  // model type other than BPE; InvalidArgument when the vocabulary is inconsistent (an
  // empty or duplicate piece, no or two UNKNOWN pieces, byte pieces without byte_fallback
  // or fewer than 256 of them with it, a malformed <0xNN> piece, trainer_spec ids outside
  // the vocabulary) or the character map is malformed.
  static absl::StatusOr<SentencePieceBpe> Create(SentencePieceModelProto proto,
                                                 const std::string& file);

  // Appends the ids of `text` (normalized and segmented like SentencePieceProcessor::
  // Encode, without BOS/EOS) to `out`. Never fails: bytes that are not UTF-8 become U+FFFD.
  void Encode(std::string_view text, std::vector<int32_t>* out) const;

  int32_t vocab_size() const { return static_cast<int32_t>(pieces_.size()); }
  // `id` must be in [0, vocab_size()).
  const std::string& piece(int32_t id) const { return pieces_[id].piece; }
  PieceType type(int32_t id) const { return pieces_[id].type; }
  // Returns the byte of a BYTE piece, or -1.
  int byte_value(int32_t id) const { return byte_values_[id]; }
  // Returns the id of `piece` (control, unknown and byte pieces first), or nullopt.
  std::optional<int32_t> PieceToId(std::string_view piece) const;
  int32_t unk_id() const { return unk_id_; }
  // trainer_spec's bos_id / eos_id when that piece is a CONTROL piece (as
  // libsentencepiece's bos_id() / eos_id() find them), else nullopt.
  std::optional<int32_t> bos_id() const { return bos_id_; }
  std::optional<int32_t> eos_id() const { return eos_id_; }

  // How decoding treats the leading U+2581: stripped from the first piece when the
  // normalizer adds a dummy prefix or removes extra whitespace (all leading ones then).
  bool strip_leading_space() const { return add_dummy_prefix_ || remove_extra_whitespaces_; }
  bool remove_extra_whitespaces() const { return remove_extra_whitespaces_; }
  // libsentencepiece rewrites decoded text with the denormalizer_spec when it has a
  // character map.
  bool has_denormalizer() const { return denormalizer_.has_value(); }
  // Returns `text` rewritten by the denormalizer; `text` unchanged without one.
  std::string Denormalize(std::string_view text) const;

 private:
  SentencePieceBpe() = default;
  // Segments normalized text into (piece, id) pairs: libsentencepiece's bpe::Model::Encode.
  void Segment(std::string_view normalized,
               std::vector<std::pair<std::string_view, int32_t>>* out) const;
  int32_t IdOrUnknown(std::string_view piece) const;

  std::vector<SentencePieceModelProto::Piece> pieces_;
  std::vector<int16_t> byte_values_;  // per id: the byte of a BYTE piece, else -1
  // NORMAL, USER_DEFINED and UNUSED pieces: the candidates for merges.
  absl::flat_hash_map<std::string, int32_t> mergeable_;
  // CONTROL, UNKNOWN and BYTE pieces (libsentencepiece's reserved_id_map_).
  absl::flat_hash_map<std::string, int32_t> reserved_;
  PieceMatcher user_defined_;
  SentencePieceNormalizer normalizer_;
  std::optional<SentencePieceNormalizer> denormalizer_;
  std::array<int32_t, 256> byte_ids_{};
  int32_t unk_id_ = 0;
  std::optional<int32_t> bos_id_;
  std::optional<int32_t> eos_id_;
  bool byte_fallback_ = false;
  bool add_dummy_prefix_ = true;
  bool remove_extra_whitespaces_ = true;
};

}  // namespace orca::tokenizer_internal
