#include "engine/chat/json_stream.h"

#include <cmath>
#include <cstdlib>

#include "engine/common/utf8.h"

namespace orca {
namespace {

bool IsBlank(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool IsDigit(uint8_t c) { return c >= '0' && c <= '9'; }

int HexValue(uint8_t c) {
  if (IsDigit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

JsonStreamChecker::Byte JsonStreamChecker::Push(char byte) {
  if (done_ || broken_) return Byte::kBad;
  const auto c = static_cast<uint8_t>(byte);
  switch (token_) {
    case Token::kString:
      return InString(c);
    case Token::kNumber:
      return InNumber(c);
    case Token::kLiteral:
      return InLiteral(c);
    case Token::kNone:
      break;
  }
  return Between(c);
}

JsonStreamChecker::Byte JsonStreamChecker::Between(uint8_t c) {
  if (IsBlank(c)) return Byte::kBlank;
  auto start_key = [this] {
    token_ = Token::kString;
    key_ = true;
    return Byte::kSignificant;
  };
  switch (expect_) {
    case Expect::kValue:
      return StartValue(c);
    case Expect::kValueOrClose:
      return c == ']' ? Close(c) : StartValue(c);
    case Expect::kKeyOrClose:
      if (c == '}') return Close(c);
      return c == '"' ? start_key() : Bad();
    case Expect::kKey:
      return c == '"' ? start_key() : Bad();
    case Expect::kColon:
      if (c != ':') return Bad();
      expect_ = Expect::kValue;
      return Byte::kSignificant;
    case Expect::kCommaOrClose:
      if (c == '}' || c == ']') return Close(c);
      if (c != ',') return Bad();
      expect_ = stack_.back() == '{' ? Expect::kKey : Expect::kValue;
      return Byte::kSignificant;
  }
  return Bad();
}

JsonStreamChecker::Byte JsonStreamChecker::StartValue(uint8_t c) {
  switch (c) {
    case '{':
    case '[':
      return Open(c);
    case '"':
      token_ = Token::kString;
      key_ = false;
      return Byte::kSignificant;
    case '-':
      num_ = Num::kMinus;
      break;
    case '0':
      num_ = Num::kZero;
      break;
    case 't':
    case 'f':
    case 'n':
      token_ = Token::kLiteral;
      literal_ = c == 't' ? "true" : c == 'f' ? "false" : "null";
      literal_at_ = 1;
      return Byte::kSignificant;
    default:
      if (!IsDigit(c)) return Bad();
      num_ = Num::kInt;
  }
  token_ = Token::kNumber;
  number_.assign(1, static_cast<char>(c));
  return Byte::kSignificant;
}

JsonStreamChecker::Byte JsonStreamChecker::Open(uint8_t c) {
  if (static_cast<int>(stack_.size()) >= max_depth_) return Bad();
  stack_.push_back(static_cast<char>(c));
  expect_ = c == '{' ? Expect::kKeyOrClose : Expect::kValueOrClose;
  return Byte::kSignificant;
}

JsonStreamChecker::Byte JsonStreamChecker::Close(uint8_t c) {
  if (stack_.empty() || stack_.back() != (c == '}' ? '{' : '[')) return Bad();
  stack_.pop_back();
  EndValue();
  return Byte::kSignificant;
}

void JsonStreamChecker::EndValue() {
  token_ = Token::kNone;
  if (stack_.empty()) {
    done_ = true;
  } else {
    expect_ = Expect::kCommaOrClose;
  }
}

JsonStreamChecker::Byte JsonStreamChecker::InString(uint8_t c) {
  if (utf8_left_ > 0) {  // a multi-byte character's continuation
    if (c < utf8_lo_ || c > utf8_hi_) return Bad();
    --utf8_left_;
    utf8_lo_ = 0x80;
    utf8_hi_ = 0xBF;
    return Byte::kSignificant;
  }
  if (need_low_ > 0) {  // "\uD8xx" must go on with "\uDCxx"
    if (c != (need_low_ == 2 ? '\\' : 'u')) return Bad();
    if (--need_low_ == 0) {
      in_low_ = true;
      escape_ = 2;
      unit_ = 0;
    }
    return Byte::kSignificant;
  }
  if (escape_ == 1) {
    switch (c) {
      case '"':
      case '\\':
      case '/':
      case 'b':
      case 'f':
      case 'n':
      case 'r':
      case 't':
        escape_ = 0;
        return Byte::kSignificant;
      case 'u':
        escape_ = 2;
        unit_ = 0;
        return Byte::kSignificant;
      default:
        return Bad();
    }
  }
  if (escape_ >= 2) {  // the hex digits of \uXXXX
    const int v = HexValue(c);
    if (v < 0) return Bad();
    unit_ = unit_ * 16 + static_cast<uint32_t>(v);
    if (++escape_ < 6) return Byte::kSignificant;
    escape_ = 0;
    const bool high = unit_ >= 0xD800 && unit_ <= 0xDBFF;
    const bool low = unit_ >= 0xDC00 && unit_ <= 0xDFFF;
    if (low != in_low_) return Bad();
    in_low_ = false;
    if (high) need_low_ = 2;
    return Byte::kSignificant;
  }
  if (c == '"') {
    if (key_) {
      token_ = Token::kNone;
      expect_ = Expect::kColon;
    } else {
      EndValue();
    }
    return Byte::kSignificant;
  }
  if (c == '\\') {
    escape_ = 1;
    return Byte::kSignificant;
  }
  if (c < 0x20) return Bad();
  // A character's first byte: the bytes it says are due, checked as they come.
  const Utf8Lead lead = Utf8LeadByte(c);
  if (lead.length == 0) return Bad();
  utf8_left_ = static_cast<uint8_t>(lead.length - 1);
  utf8_lo_ = lead.lo;
  utf8_hi_ = lead.hi;
  return Byte::kSignificant;
}

JsonStreamChecker::Byte JsonStreamChecker::InNumber(uint8_t c) {
  const bool digit = IsDigit(c);
  const bool e = c == 'e' || c == 'E';
  Num next = num_;
  bool ends = false;
  switch (num_) {
    case Num::kMinus:
      if (!digit) return Bad();
      next = c == '0' ? Num::kZero : Num::kInt;
      break;
    case Num::kZero:
    case Num::kInt:
      if (digit && num_ == Num::kInt) {
        next = Num::kInt;
      } else if (c == '.') {
        next = Num::kDot;
      } else if (e) {
        next = Num::kE;
      } else {
        ends = true;
      }
      break;
    case Num::kDot:
      if (!digit) return Bad();
      next = Num::kFrac;
      break;
    case Num::kFrac:
      if (e) {
        next = Num::kE;
      } else if (!digit) {
        ends = true;
      }
      break;
    case Num::kE:
      if (c == '+' || c == '-') {
        next = Num::kESign;
      } else if (digit) {
        next = Num::kExp;
      } else {
        return Bad();
      }
      break;
    case Num::kESign:
      if (!digit) return Bad();
      next = Num::kExp;
      break;
    case Num::kExp:
      ends = !digit;
      break;
  }
  if (!ends) {
    num_ = next;
    number_ += static_cast<char>(c);
    return Byte::kSignificant;
  }
  // The number ended with the byte before: `c` follows it. One that a double cannot
  // hold (1e400) is refused there, as nlohmann refuses it.
  if (!std::isfinite(std::strtod(number_.c_str(), nullptr))) return Bad();
  EndValue();
  if (done_) return IsBlank(c) ? Byte::kBlank : Byte::kBad;
  return Between(c);
}

JsonStreamChecker::Byte JsonStreamChecker::InLiteral(uint8_t c) {
  if (c != static_cast<uint8_t>(literal_[literal_at_])) return Bad();
  if (literal_[++literal_at_] == '\0') EndValue();
  return Byte::kSignificant;
}

}  // namespace orca
