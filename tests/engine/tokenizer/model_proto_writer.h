// Writes SentencePiece ModelProto bytes for tests: a small protocol-buffer writer for
// hand-made (and deliberately malformed) messages, and a serializer of
// tokenizer_internal::SentencePieceModelProto so that orca and libsentencepiece can load
// the same edited model.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/tokenizer/internal/sentencepiece_model_proto.h"

namespace orca::tokenizer_test {

class ProtoWriter {
 public:
  ProtoWriter& Varint(uint32_t field, uint64_t value);
  ProtoWriter& Fixed32(uint32_t field, uint32_t value);
  ProtoWriter& Float(uint32_t field, float value);
  ProtoWriter& Bytes(uint32_t field, std::string_view bytes);
  ProtoWriter& Message(uint32_t field, const ProtoWriter& message) {
    return Bytes(field, message.data());
  }
  // Appends raw bytes (for malformed input).
  ProtoWriter& Raw(std::string_view bytes);
  const std::string& data() const { return data_; }

  // Returns the varint encoding of `value`.
  static std::string EncodeVarint(uint64_t value);

 private:
  std::string data_;
};

// Serializes every field SentencePieceModelProto holds (defaults included).
std::string SerializeSentencePieceModel(const tokenizer_internal::SentencePieceModelProto& proto);

// A valid BPE model: <unk>, <s>, </s>, the 256 byte pieces (ids 3..258), then "▁", "a",
// "b", "c", "d", "e", "▁a", "ab", "▁ab", "cd", "▁abcd" (ids 259..269) with descending
// scores; byte fallback on, identity normalizer with default flags.
tokenizer_internal::SentencePieceModelProto TinySentencePieceModel();

}  // namespace orca::tokenizer_test
