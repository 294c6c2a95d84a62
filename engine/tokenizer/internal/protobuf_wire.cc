#include "engine/tokenizer/internal/protobuf_wire.h"

#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"

namespace orca::tokenizer_internal {
namespace {

template <typename... Args>
absl::Status Malformed(const Args&... args) {
  return absl::InvalidArgumentError(absl::StrCat(args...));
}

}  // namespace

const char* WireTypeName(WireType type) {
  switch (type) {
    case WireType::kVarint:
      return "varint";
    case WireType::kFixed64:
      return "fixed64";
    case WireType::kLengthDelimited:
      return "length-delimited";
    case WireType::kStartGroup:
      return "start-group";
    case WireType::kEndGroup:
      return "end-group";
    case WireType::kFixed32:
      return "fixed32";
  }
  return "unknown";
}

absl::Status WireReader::ReadVarint(uint64_t* value) {
  const size_t start = offset();
  uint64_t result = 0;
  // At most 10 bytes; the 10th may only carry the 64th bit.
  for (int i = 0; i < 10; ++i) {
    if (rest_.empty()) return Malformed("truncated varint at byte ", start);
    const auto byte = static_cast<uint8_t>(rest_.front());
    rest_.remove_prefix(1);
    if (i == 9 && byte > 1) return Malformed("bad varint (over 64 bits) at byte ", start);
    result |= static_cast<uint64_t>(byte & 0x7F) << (7 * i);
    if ((byte & 0x80) == 0) {
      *value = result;
      return absl::OkStatus();
    }
  }
  return Malformed("bad varint (over 10 bytes) at byte ", start);
}

absl::Status WireReader::Next(WireField* field) {
  const size_t start = offset();
  uint64_t tag = 0;
  ORCA_RETURN_IF_ERROR(ReadVarint(&tag));
  const uint64_t number = tag >> 3;
  const auto type = static_cast<uint8_t>(tag & 7);
  if (number == 0 || number > (uint64_t{1} << 29) - 1) {
    return Malformed("invalid field number ", number, " at byte ", start);
  }
  field->number = static_cast<uint32_t>(number);
  field->type = static_cast<WireType>(type);
  field->value = 0;
  field->bytes = {};
  auto fixed = [&](size_t size) -> absl::Status {
    if (rest_.size() < size) {
      return Malformed("truncated ", WireTypeName(field->type), " field ", number, " at byte ",
                       start);
    }
    for (size_t i = 0; i < size; ++i) {
      field->value |= static_cast<uint64_t>(static_cast<uint8_t>(rest_[i])) << (8 * i);
    }
    rest_.remove_prefix(size);
    return absl::OkStatus();
  };
  switch (type) {
    case 0:
      return ReadVarint(&field->value);
    case 1:
      return fixed(8);
    case 5:
      return fixed(4);
    case 2: {
      uint64_t length = 0;
      ORCA_RETURN_IF_ERROR(ReadVarint(&length));
      if (length > rest_.size()) {
        return Malformed("field ", number, " at byte ", start, " has length ", length, " but only ",
                         rest_.size(), " bytes remain");
      }
      field->bytes = rest_.substr(0, static_cast<size_t>(length));
      rest_.remove_prefix(static_cast<size_t>(length));
      return absl::OkStatus();
    }
    default:
      return Malformed("unsupported wire type ", int{type}, " (",
                       type <= 5 ? WireTypeName(field->type) : "invalid", ") of field ", number,
                       " at byte ", start);
  }
}

}  // namespace orca::tokenizer_internal
