// The parts of a serialized sentencepiece.ModelProto (tokenizer.model) that encoding and
// decoding depend on, read with the bounds-checked wire reader of protobuf_wire.h.
//
// Field numbers and proto2 defaults are those of SentencePiece's sentencepiece_model.proto;
// fields orca does not use (training parameters, self-test data, extensions) are skipped.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace orca::tokenizer_internal {

struct SentencePieceModelProto {
  // ModelProto.SentencePiece.Type.
  enum class PieceType : int32_t {
    kNormal = 1,
    kUnknown = 2,
    kControl = 3,
    kUserDefined = 4,
    kUnused = 5,
    kByte = 6,
  };
  // TrainerSpec.ModelType.
  enum class ModelType : int32_t { kUnigram = 1, kBpe = 2, kWord = 3, kChar = 4 };

  struct Piece {
    std::string piece;                    // field 1
    float score = 0;                      // field 2
    PieceType type = PieceType::kNormal;  // field 3
  };
  struct NormalizerSpec {
    std::string name;                      // field 1
    std::string precompiled_charsmap;      // field 2
    bool add_dummy_prefix = true;          // field 3
    bool remove_extra_whitespaces = true;  // field 4
    bool escape_whitespaces = true;        // field 5
  };

  std::vector<Piece> pieces;  // ModelProto field 1
  // ModelProto field 2, TrainerSpec:
  ModelType model_type = ModelType::kUnigram;  // field 3
  bool treat_whitespace_as_suffix = false;     // field 24
  bool byte_fallback = false;                  // field 35
  int32_t unk_id = 0;                          // field 40
  int32_t bos_id = 1;                          // field 41
  int32_t eos_id = 2;                          // field 42
  int32_t pad_id = -1;                         // field 43
  NormalizerSpec normalizer;                   // ModelProto field 3
  std::optional<NormalizerSpec> denormalizer;  // ModelProto field 5
};

// The most pieces a model may have: 16 times the largest real vocabularies (Gemma's
// 262144), so that a hostile file cannot make the parser allocate gigabytes.
inline constexpr size_t kMaxSentencePieces = size_t{1} << 22;

// Returns the name of `type` ("UNIGRAM", "BPE", ...) for messages.
const char* ModelTypeName(SentencePieceModelProto::ModelType type);

// Parses `bytes`, the contents of file `file` (named in errors). Fails with
// InvalidArgument when the bytes are not a well-formed ModelProto: truncation, a bad
// varint, a known field with the wrong wire type, an enum value out of range, a NaN
// score, or more than kMaxSentencePieces pieces. The message names the file and the
// field (e.g. "pieces[12].score"), and the byte offset where the wire format breaks.
// Semantic checks (duplicate pieces, the unknown piece, ...) are the caller's.
absl::StatusOr<SentencePieceModelProto> ParseSentencePieceModelProto(std::string_view bytes,
                                                                     const std::string& file);

}  // namespace orca::tokenizer_internal
