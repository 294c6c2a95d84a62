#include "engine/tokenizer/internal/sentencepiece_model_proto.h"

#include <bit>
#include <cmath>
#include <functional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"
#include "engine/tokenizer/internal/protobuf_wire.h"

namespace orca::tokenizer_internal {
namespace {

using Proto = SentencePieceModelProto;

// Reads one message, handing each field to `on_field`; errors name `file` and `path`.
class MessageParser {
 public:
  MessageParser(std::string_view input, const std::string& file) : input_(input), file_(file) {}

  absl::Status Parse(std::string_view message, const std::string& path,
                     const std::function<absl::Status(const WireField&)>& on_field) const {
    WireReader reader(input_, message);
    while (!reader.done()) {
      WireField field;
      if (absl::Status s = reader.Next(&field); !s.ok()) return Error(path, s.message());
      ORCA_RETURN_IF_ERROR(on_field(field));
    }
    return absl::OkStatus();
  }

  absl::Status Error(const std::string& path, absl::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat(file_, ": not a valid SentencePiece model: ", path, ": ", what));
  }

  // Checks that `field` (named path.name) has wire type `type`.
  absl::Status Expect(const WireField& field, WireType type, const std::string& path,
                      const char* name) const {
    if (field.type == type) return absl::OkStatus();
    return Error(Join(path, name),
                 absl::StrCat("field ", field.number, " has wire type ", WireTypeName(field.type),
                              ", expected ", WireTypeName(type)));
  }

  absl::Status String(const WireField& field, const std::string& path, const char* name,
                      std::string* out) const {
    ORCA_RETURN_IF_ERROR(Expect(field, WireType::kLengthDelimited, path, name));
    out->assign(field.bytes.data(), field.bytes.size());
    return absl::OkStatus();
  }

  absl::Status Bool(const WireField& field, const std::string& path, const char* name,
                    bool* out) const {
    ORCA_RETURN_IF_ERROR(Expect(field, WireType::kVarint, path, name));
    *out = field.value != 0;
    return absl::OkStatus();
  }

  // int32 and enum fields: a varint whose low 32 bits are the two's-complement value.
  absl::Status Int32(const WireField& field, const std::string& path, const char* name,
                     int32_t* out) const {
    ORCA_RETURN_IF_ERROR(Expect(field, WireType::kVarint, path, name));
    *out = static_cast<int32_t>(static_cast<uint32_t>(field.value));
    return absl::OkStatus();
  }

  template <typename Enum>
  absl::Status EnumField(const WireField& field, const std::string& path, const char* name,
                         int32_t lo, int32_t hi, Enum* out) const {
    int32_t value = 0;
    ORCA_RETURN_IF_ERROR(Int32(field, path, name, &value));
    if (value < lo || value > hi) {
      return Error(Join(path, name), absl::StrCat(value, " is not a known value"));
    }
    *out = static_cast<Enum>(value);
    return absl::OkStatus();
  }

  static std::string Join(const std::string& path, const char* name) {
    return path.empty() ? name : absl::StrCat(path, ".", name);
  }

 private:
  std::string_view input_;
  const std::string& file_;
};

absl::Status ParsePiece(const MessageParser& p, std::string_view message, const std::string& path,
                        Proto::Piece* piece) {
  return p.Parse(message, path, [&](const WireField& f) -> absl::Status {
    switch (f.number) {
      case 1:
        return p.String(f, path, "piece", &piece->piece);
      case 2: {
        ORCA_RETURN_IF_ERROR(p.Expect(f, WireType::kFixed32, path, "score"));
        piece->score = std::bit_cast<float>(static_cast<uint32_t>(f.value));
        // A NaN would break the strict ordering the BPE merge queue relies on.
        if (std::isnan(piece->score)) return p.Error(MessageParser::Join(path, "score"), "NaN");
        return absl::OkStatus();
      }
      case 3:
        return p.EnumField(f, path, "type", 1, 6, &piece->type);
      default:
        return absl::OkStatus();
    }
  });
}

absl::Status ParseTrainerSpec(const MessageParser& p, std::string_view message, Proto* proto) {
  const std::string path = "trainer_spec";
  return p.Parse(message, path, [&](const WireField& f) -> absl::Status {
    switch (f.number) {
      case 3:
        return p.EnumField(f, path, "model_type", 1, 4, &proto->model_type);
      case 24:
        return p.Bool(f, path, "treat_whitespace_as_suffix", &proto->treat_whitespace_as_suffix);
      case 35:
        return p.Bool(f, path, "byte_fallback", &proto->byte_fallback);
      case 40:
        return p.Int32(f, path, "unk_id", &proto->unk_id);
      case 41:
        return p.Int32(f, path, "bos_id", &proto->bos_id);
      case 42:
        return p.Int32(f, path, "eos_id", &proto->eos_id);
      case 43:
        return p.Int32(f, path, "pad_id", &proto->pad_id);
      default:
        return absl::OkStatus();
    }
  });
}

absl::Status ParseNormalizerSpec(const MessageParser& p, std::string_view message,
                                 const std::string& path, Proto::NormalizerSpec* spec) {
  return p.Parse(message, path, [&](const WireField& f) -> absl::Status {
    switch (f.number) {
      case 1:
        return p.String(f, path, "name", &spec->name);
      case 2:
        return p.String(f, path, "precompiled_charsmap", &spec->precompiled_charsmap);
      case 3:
        return p.Bool(f, path, "add_dummy_prefix", &spec->add_dummy_prefix);
      case 4:
        return p.Bool(f, path, "remove_extra_whitespaces", &spec->remove_extra_whitespaces);
      case 5:
        return p.Bool(f, path, "escape_whitespaces", &spec->escape_whitespaces);
      default:
        return absl::OkStatus();
    }
  });
}

}  // namespace

const char* ModelTypeName(Proto::ModelType type) {
  switch (type) {
    case Proto::ModelType::kUnigram:
      return "UNIGRAM";
    case Proto::ModelType::kBpe:
      return "BPE";
    case Proto::ModelType::kWord:
      return "WORD";
    case Proto::ModelType::kChar:
      return "CHAR";
  }
  return "unknown";
}

absl::StatusOr<SentencePieceModelProto> ParseSentencePieceModelProto(std::string_view bytes,
                                                                     const std::string& file) {
  const MessageParser p(bytes, file);
  Proto proto;
  // As in protobuf, a sub-message that occurs twice is merged field by field.
  ORCA_RETURN_IF_ERROR(p.Parse(bytes, "", [&](const WireField& f) -> absl::Status {
    switch (f.number) {
      case 1: {
        const std::string path = absl::StrCat("pieces[", proto.pieces.size(), "]");
        ORCA_RETURN_IF_ERROR(p.Expect(f, WireType::kLengthDelimited, "", "pieces"));
        if (proto.pieces.size() >= kMaxSentencePieces) {
          return p.Error("pieces", absl::StrCat("more than ", kMaxSentencePieces));
        }
        Proto::Piece piece;
        ORCA_RETURN_IF_ERROR(ParsePiece(p, f.bytes, path, &piece));
        proto.pieces.push_back(std::move(piece));
        return absl::OkStatus();
      }
      case 2:
        ORCA_RETURN_IF_ERROR(p.Expect(f, WireType::kLengthDelimited, "", "trainer_spec"));
        return ParseTrainerSpec(p, f.bytes, &proto);
      case 3:
        ORCA_RETURN_IF_ERROR(p.Expect(f, WireType::kLengthDelimited, "", "normalizer_spec"));
        return ParseNormalizerSpec(p, f.bytes, "normalizer_spec", &proto.normalizer);
      case 5:
        ORCA_RETURN_IF_ERROR(p.Expect(f, WireType::kLengthDelimited, "", "denormalizer_spec"));
        // Not emplace(): clang 14 deems the nested struct not default-constructible there.
        if (!proto.denormalizer.has_value()) {
          proto.denormalizer = SentencePieceModelProto::NormalizerSpec{};
        }
        return ParseNormalizerSpec(p, f.bytes, "denormalizer_spec", &*proto.denormalizer);
      default:
        return absl::OkStatus();
    }
  }));
  return proto;
}

}  // namespace orca::tokenizer_internal
