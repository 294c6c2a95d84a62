// A minimal reader of the protocol-buffer wire format (varints, fixed32/64 and
// length-delimited fields), enough to read SentencePiece's tokenizer.model.
//
// Why not libprotobuf: orca links the system libprotobuf for gRPC, and Debian's
// libsentencepiece bundles a second copy of protobuf-lite; the two clash at start-up. A
// generated parser would tie the tokenizer to libprotobuf's version and its static
// initialisers for the sake of four small messages, whereas this reader is ~100 lines
// that treat the file as untrusted bytes: every length and offset is checked and no
// field can make it allocate more than the input's size.
//
// Stateless apart from its position; one reader per message, not shared between threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/status/status.h"

namespace orca::tokenizer_internal {

enum class WireType : uint8_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,  // deprecated groups: rejected
  kEndGroup = 4,
  kFixed32 = 5,
};

// Returns "varint", "fixed64", ... for error messages.
const char* WireTypeName(WireType type);

struct WireField {
  uint32_t number = 0;
  WireType type = WireType::kVarint;
  uint64_t value = 0;      // kVarint: the value; kFixed32/kFixed64: the raw little-endian bits
  std::string_view bytes;  // kLengthDelimited: the payload (a view into the input)
};

class WireReader {
 public:
  // Reads the fields of the serialized message `message`, a view into `input` (the whole
  // file), which only serves to report byte offsets. Both must outlive the reader.
  WireReader(std::string_view input, std::string_view message) : input_(input), rest_(message) {}

  bool done() const { return rest_.empty(); }

  // Reads the next field into `*field`. Fails with InvalidArgument saying what is wrong
  // and at which byte offset of the input (the caller adds the file name): a truncated or
  // over-long varint, a length beyond the end of the message, field number 0 or above
  // 2^29-1, or a group or unknown wire type.
  absl::Status Next(WireField* field);

 private:
  size_t offset() const { return static_cast<size_t>(rest_.data() - input_.data()); }
  absl::Status ReadVarint(uint64_t* value);

  std::string_view input_;
  std::string_view rest_;
};

}  // namespace orca::tokenizer_internal
