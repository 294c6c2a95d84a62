#include "tests/engine/tokenizer/model_proto_writer.h"

#include <bit>
#include <cstdio>

namespace orca::tokenizer_test {

using tokenizer_internal::SentencePieceModelProto;

std::string ProtoWriter::EncodeVarint(uint64_t value) {
  std::string out;
  do {
    uint8_t byte = value & 0x7F;
    value >>= 7;
    if (value != 0) byte |= 0x80;
    out.push_back(static_cast<char>(byte));
  } while (value != 0);
  return out;
}

ProtoWriter& ProtoWriter::Varint(uint32_t field, uint64_t value) {
  data_ += EncodeVarint(uint64_t{field} << 3 | 0);
  data_ += EncodeVarint(value);
  return *this;
}

ProtoWriter& ProtoWriter::Fixed32(uint32_t field, uint32_t value) {
  data_ += EncodeVarint(uint64_t{field} << 3 | 5);
  for (int i = 0; i < 4; ++i) data_.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
  return *this;
}

ProtoWriter& ProtoWriter::Float(uint32_t field, float value) {
  return Fixed32(field, std::bit_cast<uint32_t>(value));
}

ProtoWriter& ProtoWriter::Bytes(uint32_t field, std::string_view bytes) {
  data_ += EncodeVarint(uint64_t{field} << 3 | 2);
  data_ += EncodeVarint(bytes.size());
  data_ += bytes;
  return *this;
}

ProtoWriter& ProtoWriter::Raw(std::string_view bytes) {
  data_ += bytes;
  return *this;
}

std::string SerializeSentencePieceModel(const SentencePieceModelProto& proto) {
  // Negative int32 values are sign-extended to 64 bits, as protobuf writes them.
  auto int32 = [](int32_t v) { return static_cast<uint64_t>(static_cast<int64_t>(v)); };
  auto normalizer = [](const SentencePieceModelProto::NormalizerSpec& spec) {
    ProtoWriter w;
    w.Bytes(1, spec.name)
        .Bytes(2, spec.precompiled_charsmap)
        .Varint(3, spec.add_dummy_prefix)
        .Varint(4, spec.remove_extra_whitespaces)
        .Varint(5, spec.escape_whitespaces);
    return w;
  };
  ProtoWriter model;
  for (const SentencePieceModelProto::Piece& piece : proto.pieces) {
    ProtoWriter p;
    p.Bytes(1, piece.piece).Float(2, piece.score).Varint(3, static_cast<uint64_t>(piece.type));
    model.Message(1, p);
  }
  ProtoWriter trainer;
  trainer.Varint(3, static_cast<uint64_t>(proto.model_type))
      .Varint(24, proto.treat_whitespace_as_suffix)
      .Varint(35, proto.byte_fallback)
      .Varint(40, int32(proto.unk_id))
      .Varint(41, int32(proto.bos_id))
      .Varint(42, int32(proto.eos_id))
      .Varint(43, int32(proto.pad_id));
  model.Message(2, trainer);
  model.Message(3, normalizer(proto.normalizer));
  if (proto.denormalizer.has_value()) model.Message(5, normalizer(*proto.denormalizer));
  return model.data();
}

SentencePieceModelProto TinySentencePieceModel() {
  using Type = SentencePieceModelProto::PieceType;
  SentencePieceModelProto proto;
  proto.model_type = SentencePieceModelProto::ModelType::kBpe;
  proto.byte_fallback = true;
  proto.normalizer.name = "identity";
  proto.pieces.push_back({"<unk>", 0, Type::kUnknown});
  proto.pieces.push_back({"<s>", 0, Type::kControl});
  proto.pieces.push_back({"</s>", 0, Type::kControl});
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    proto.pieces.push_back({name, 0, Type::kByte});
  }
  float score = 0;
  for (const char* piece : {"\xE2\x96\x81", "a", "b", "c", "d", "e",
                            "\xE2\x96\x81"
                            "a",
                            "ab",
                            "\xE2\x96\x81"
                            "ab",
                            "cd",
                            "\xE2\x96\x81"
                            "abcd"}) {
    proto.pieces.push_back({piece, score, Type::kNormal});
    score -= 1;
  }
  return proto;
}

}  // namespace orca::tokenizer_test
