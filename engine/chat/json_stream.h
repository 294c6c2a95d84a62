// A JSON checker that reads text a byte at a time, as a model writes it: it says at
// the first byte after which no JSON text can follow, and when one whole value has been
// read. The tool-call parsers (tool_calls.h) stream a call's arguments through it, so
// every byte they pass on is part of a valid JSON prefix, and drop the blanks it marks
// as insignificant (arguments go out compact).
//
// The grammar is RFC 8259's, checked as strictly as nlohmann::json::accept checks it
// (tests/engine/chat/json_stream_test.cc compares the two): strings hold well-formed
// UTF-8 and no control characters, \u escapes pair their surrogates, numbers have no
// leading zeros and fit a double (1e400 is refused at the byte after it), literals are
// true / false / null. Arrays and objects nest at most
// `max_depth` levels. Blanks may come before the value; after it, nothing is read.
// A top-level number cannot be known to have ended (the byte after it would tell): it is
// never done().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace orca {

class JsonStreamChecker {
 public:
  enum class Byte {
    kBad,          // no JSON text continues the bytes read with this one (not read)
    kSignificant,  // part of the value
    kBlank,        // a blank between tokens: the value reads the same without it
  };

  explicit JsonStreamChecker(int max_depth) : max_depth_(max_depth) {}

  // Reads one more byte. After a kBad, or once done(), every byte is kBad.
  Byte Push(char byte);
  // Whether one whole object or array has been read.
  bool done() const { return done_; }
  // Whether a kBad was returned.
  bool broken() const { return broken_; }

 private:
  enum class Expect : uint8_t {
    kValue,         // a value (at the top, after ':' or after ',' in an array)
    kValueOrClose,  // just after '['
    kKeyOrClose,    // just after '{'
    kKey,           // after ',' in an object
    kColon,         // after a key
    kCommaOrClose,  // after a value inside a container
  };
  enum class Token : uint8_t { kNone, kString, kNumber, kLiteral };
  enum class Num : uint8_t { kMinus, kZero, kInt, kDot, kFrac, kE, kESign, kExp };

  Byte Between(uint8_t c);  // outside any token
  Byte InString(uint8_t c);
  Byte InNumber(uint8_t c);  // may end the number and read `c` after it
  Byte InLiteral(uint8_t c);
  Byte StartValue(uint8_t c);
  Byte Open(uint8_t c);
  Byte Close(uint8_t c);
  void EndValue();  // a value inside the top one (or the top one) ended
  Byte Bad() {
    broken_ = true;
    return Byte::kBad;
  }

  int max_depth_;
  std::vector<char> stack_;  // '{' or '[' per open container
  Expect expect_ = Expect::kValue;
  Token token_ = Token::kNone;
  bool done_ = false, broken_ = false;
  // A string: whether it is a key; an escape in progress (0 none, 1 after '\', 2-5
  // hex digits read + 2); the code unit of a \u escape; whether a low surrogate escape
  // must come next (2: its '\', 1: its 'u', then in hex); UTF-8 continuation bytes
  // still due and the range the next one must fall in.
  bool key_ = false;
  uint8_t escape_ = 0;
  uint32_t unit_ = 0;
  uint8_t need_low_ = 0;
  bool in_low_ = false;
  uint8_t utf8_left_ = 0, utf8_lo_ = 0x80, utf8_hi_ = 0xBF;
  Num num_ = Num::kMinus;
  std::string number_;             // the number read so far
  const char* literal_ = nullptr;  // the literal being read and how far
  uint8_t literal_at_ = 0;
};

}  // namespace orca
