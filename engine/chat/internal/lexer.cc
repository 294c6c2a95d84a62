#include "engine/chat/internal/lexer.h"

#include <cctype>
#include <cstdlib>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/chat/internal/py_string.h"
#include "engine/common/status_macros.h"

namespace orca::chat_internal {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Length of the Python-whitespace code point at s[i], or 0.
size_t SpaceAt(const std::string& s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return IsPySpace(c) ? 1 : 0;
  size_t len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
  if (i + len > s.size()) return 0;
  const std::vector<char32_t> cps = DecodeUtf8(std::string_view(s).substr(i, len));
  return (cps.size() == 1 && IsPySpace(cps[0])) ? len : 0;
}

size_t SkipSpaces(const std::string& s, size_t pos) {
  while (pos < s.size()) {
    const size_t len = SpaceAt(s, pos);
    if (len == 0) break;
    pos += len;
  }
  return pos;
}

// Python's str.rstrip() on s[begin, end): returns the new end.
size_t RstripEnd(const std::string& s, size_t begin, size_t end) {
  std::vector<char32_t> cps = DecodeUtf8(std::string_view(s).substr(begin, end - begin));
  size_t n = cps.size();
  while (n > 0 && IsPySpace(cps[n - 1])) --n;
  return begin + EncodeUtf8(cps, 0, n).size();
}

// True when s[begin, end) is non-empty and all whitespace.
bool AllSpace(const std::string& s, size_t begin, size_t end) {
  if (begin >= end) return false;
  for (char32_t cp : DecodeUtf8(std::string_view(s).substr(begin, end - begin))) {
    if (!IsPySpace(cp)) return false;
  }
  return true;
}

bool StartsWith(const std::string& s, size_t pos, const char* prefix) {
  return s.compare(pos, std::char_traits<char>::length(prefix), prefix) == 0;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Lexer {
 public:
  explicit Lexer(const std::string& source) : s_(source), map_(source) {}

  absl::StatusOr<std::vector<Token>> Run() {
    size_t pos = 0;
    bool line_starting = true;
    while (pos < s_.size()) {
      const size_t tag = FindTagStart(pos);
      if (tag == std::string::npos) {
        Emit(TokenType::kData, s_.substr(pos), pos);
        break;
      }
      const char kind = s_[tag + 1];
      size_t after = tag + 2;
      char sign = 0;
      if (after < s_.size() && (s_[after] == '-' || s_[after] == '+')) sign = s_[after++];
      std::optional<size_t> raw_end = kind == '%' ? MatchRawBegin(after) : std::nullopt;
      size_t text_end = tag;
      if (sign == '-') {
        text_end = RstripEnd(s_, pos, tag);
      } else if (sign != '+' && kind != '{') {
        const size_t nl = s_.rfind('\n', tag == 0 ? std::string::npos : tag - 1);
        const size_t line_begin = (nl == std::string::npos || nl < pos) ? pos : nl + 1;
        if ((line_begin > pos || line_starting) && AllSpace(s_, line_begin, tag)) {
          text_end = line_begin;
        }
      }
      if (text_end > pos) Emit(TokenType::kData, s_.substr(pos, text_end - pos), pos);
      if (raw_end) {
        ORCA_ASSIGN_OR_RETURN(pos, LexRaw(*raw_end, tag, &line_starting));
      } else if (kind == '#') {
        ORCA_ASSIGN_OR_RETURN(pos, LexComment(after, tag, &line_starting));
      } else {
        ORCA_ASSIGN_OR_RETURN(pos, LexTag(kind == '%', after, tag, &line_starting));
      }
    }
    Emit(TokenType::kEof, "", s_.size());
    return std::move(tokens_);
  }

 private:
  absl::Status Error(size_t offset, const std::string& message) const {
    return absl::InvalidArgumentError(absl::StrCat(map_.Describe(offset), ": ", message));
  }

  void Emit(TokenType type, std::string value, size_t offset) {
    Token t;
    t.type = type;
    t.value = std::move(value);
    t.offset = offset;
    tokens_.push_back(std::move(t));
  }

  size_t FindTagStart(size_t pos) const {
    for (size_t i = s_.find('{', pos); i != std::string::npos; i = s_.find('{', i + 1)) {
      if (i + 1 < s_.size() && (s_[i + 1] == '{' || s_[i + 1] == '%' || s_[i + 1] == '#')) return i;
    }
    return std::string::npos;
  }

  // Matches `\s*raw\s*(-%}\s*|%})` at `pos`; returns the end of the match.
  std::optional<size_t> MatchRawBegin(size_t pos) const {
    pos = SkipSpaces(s_, pos);
    if (!StartsWith(s_, pos, "raw")) return std::nullopt;
    pos = SkipSpaces(s_, pos + 3);
    if (StartsWith(s_, pos, "-%}")) return SkipSpaces(s_, pos + 3);
    if (StartsWith(s_, pos, "%}")) return pos + 2;
    return std::nullopt;
  }

  absl::StatusOr<size_t> LexRaw(size_t pos, size_t tag, bool* line_starting) {
    const bool starting = pos > 0 && s_[pos - 1] == '\n';
    for (size_t i = s_.find("{%", pos); i != std::string::npos; i = s_.find("{%", i + 1)) {
      size_t k = i + 2;
      char sign = 0;
      if (k < s_.size() && (s_[k] == '-' || s_[k] == '+')) sign = s_[k++];
      k = SkipSpaces(s_, k);
      if (!StartsWith(s_, k, "endraw")) continue;
      k = SkipSpaces(s_, k + 6);
      size_t end;
      if (StartsWith(s_, k, "+%}")) {
        end = k + 3;
      } else if (StartsWith(s_, k, "-%}")) {
        end = SkipSpaces(s_, k + 3);
      } else if (StartsWith(s_, k, "%}")) {
        end = k + 2;
        if (end < s_.size() && s_[end] == '\n') ++end;
      } else {
        continue;
      }
      size_t text_end = i;
      if (sign == '-') {
        text_end = RstripEnd(s_, pos, i);
      } else if (sign != '+') {
        const size_t nl = s_.rfind('\n', i - 1);
        const size_t line_begin = (nl == std::string::npos || nl < pos) ? pos : nl + 1;
        if ((line_begin > pos || starting) && AllSpace(s_, line_begin, i)) text_end = line_begin;
      }
      if (text_end > pos) Emit(TokenType::kData, s_.substr(pos, text_end - pos), pos);
      *line_starting = s_[end - 1] == '\n';
      return end;
    }
    return Error(tag, "missing end of raw directive");
  }

  absl::StatusOr<size_t> LexComment(size_t pos, size_t tag, bool* line_starting) {
    for (size_t i = pos; i < s_.size(); ++i) {
      size_t end = 0;
      if (StartsWith(s_, i, "+#}")) {
        end = i + 3;
      } else if (StartsWith(s_, i, "-#}")) {
        end = SkipSpaces(s_, i + 3);
      } else if (StartsWith(s_, i, "#}")) {
        end = i + 2;
        if (end < s_.size() && s_[end] == '\n') ++end;
      } else {
        continue;
      }
      *line_starting = s_[end - 1] == '\n';
      return end;
    }
    return Error(tag, "missing end of comment tag");
  }

  absl::StatusOr<size_t> LexTag(bool block, size_t pos, size_t tag, bool* line_starting) {
    Emit(block ? TokenType::kBlockBegin : TokenType::kVariableBegin, "", tag);
    std::vector<char> balancing;
    while (pos < s_.size()) {
      if (balancing.empty()) {
        size_t end = 0;
        if (block) {
          if (StartsWith(s_, pos, "+%}")) {
            end = pos + 3;
          } else if (StartsWith(s_, pos, "-%}")) {
            end = SkipSpaces(s_, pos + 3);
          } else if (StartsWith(s_, pos, "%}")) {
            end = pos + 2;
            if (end < s_.size() && s_[end] == '\n') ++end;
          }
        } else if (StartsWith(s_, pos, "-}}")) {
          end = SkipSpaces(s_, pos + 3);
        } else if (StartsWith(s_, pos, "}}")) {
          end = pos + 2;
        }
        if (end != 0) {
          Emit(block ? TokenType::kBlockEnd : TokenType::kVariableEnd, "", pos);
          *line_starting = s_[end - 1] == '\n';
          return end;
        }
      }
      const size_t space = SkipSpaces(s_, pos);
      if (space > pos) {
        pos = space;
        continue;
      }
      ORCA_ASSIGN_OR_RETURN(pos, LexExpressionToken(pos, &balancing));
    }
    // Unterminated tag: the parser reports the missing end.
    return pos;
  }

  // Digits with single underscores between them: `(\d+_)*\d+`. Returns the end or pos.
  size_t DigitRun(size_t pos) const {
    size_t i = pos;
    if (i >= s_.size() || !IsDigit(s_[i])) return pos;
    while (i < s_.size()) {
      if (IsDigit(s_[i])) {
        ++i;
      } else if (s_[i] == '_' && i + 1 < s_.size() && IsDigit(s_[i + 1])) {
        ++i;
      } else {
        break;
      }
    }
    return i;
  }

  // The float regex of jinja2.lexer; returns the end of the match or nullopt.
  std::optional<size_t> MatchFloat(size_t pos) const {
    if (pos > 0 && s_[pos - 1] == '.') return std::nullopt;
    const size_t int_end = DigitRun(pos);
    if (int_end == pos) return std::nullopt;
    auto exponent = [&](size_t i) -> std::optional<size_t> {
      if (i >= s_.size() || (s_[i] != 'e' && s_[i] != 'E')) return std::nullopt;
      ++i;
      if (i < s_.size() && (s_[i] == '+' || s_[i] == '-')) ++i;
      const size_t end = DigitRun(i);
      if (end == i) return std::nullopt;
      return end;
    };
    size_t frac_end = int_end;
    if (int_end < s_.size() && s_[int_end] == '.') {
      const size_t end = DigitRun(int_end + 1);
      if (end > int_end + 1) frac_end = end;
    }
    if (auto e = exponent(frac_end)) return e;
    if (frac_end != int_end) {
      if (auto e = exponent(int_end)) return e;
      return frac_end;
    }
    return std::nullopt;
  }

  // The integer regex of jinja2.lexer; returns the end of the match.
  size_t MatchInteger(size_t pos, int* base) const {
    *base = 10;
    if (s_[pos] == '0' && pos + 1 < s_.size()) {
      const char p = static_cast<char>(std::tolower(static_cast<unsigned char>(s_[pos + 1])));
      if (p == 'b' || p == 'o' || p == 'x') {
        *base = p == 'b' ? 2 : p == 'o' ? 8 : 16;
        size_t i = pos + 2;
        const size_t start = i;
        while (i < s_.size()) {
          size_t k = i;
          if (s_[k] == '_') ++k;
          if (k >= s_.size()) break;
          const int v = HexValue(s_[k]);
          if (v < 0 || v >= *base) break;
          i = k + 1;
        }
        if (i > start) return i;
        *base = 10;
      }
    }
    if (s_[pos] == '0') {
      size_t i = pos + 1;
      while (i < s_.size()) {
        if (s_[i] == '0') {
          ++i;
        } else if (s_[i] == '_' && i + 1 < s_.size() && s_[i + 1] == '0') {
          i += 2;
        } else {
          break;
        }
      }
      return i;
    }
    return DigitRun(pos);
  }

  absl::StatusOr<size_t> LexExpressionToken(size_t pos, std::vector<char>* balancing) {
    const char c = s_[pos];
    if (IsDigit(c)) {
      if (std::optional<size_t> end = MatchFloat(pos)) {
        std::string text;
        for (size_t i = pos; i < *end; ++i) {
          if (s_[i] != '_') text.push_back(s_[i]);
        }
        Emit(TokenType::kFloat, text, pos);
        tokens_.back().float_value = std::strtod(text.c_str(), nullptr);
        return *end;
      }
      int base = 10;
      const size_t end = MatchInteger(pos, &base);
      std::string digits;
      for (size_t i = pos + (base == 10 ? 0 : 2); i < end; ++i) {
        if (s_[i] != '_') digits.push_back(s_[i]);
      }
      std::optional<int64_t> value = PyParseInt(digits, base);
      if (!value) return Error(pos, "integer literal is too large");
      Emit(TokenType::kInteger, s_.substr(pos, end - pos), pos);
      tokens_.back().int_value = *value;
      return end;
    }
    if (IsNameStart(c)) {
      size_t end = pos + 1;
      while (end < s_.size() && IsNameChar(s_[end])) ++end;
      Emit(TokenType::kName, s_.substr(pos, end - pos), pos);
      return end;
    }
    if (c == '\'' || c == '"') return LexString(pos);
    static const char* const kOperators[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/",
                                             "*",  "%",  "~",  "[",  "]",  "(",  ")", "{", "}",
                                             ">",  "<",  "=",  ".",  ":",  "|",  ",", ";"};
    for (const char* op : kOperators) {
      if (!StartsWith(s_, pos, op)) continue;
      const std::string text(op);
      if (text == "(" || text == "[" || text == "{") {
        balancing->push_back(text == "(" ? ')' : text == "[" ? ']' : '}');
      } else if (text == ")" || text == "]" || text == "}") {
        if (balancing->empty()) return Error(pos, absl::StrCat("unexpected '", text, "'"));
        if (balancing->back() != text[0]) {
          return Error(pos, absl::StrCat("unexpected '", text, "', expected '",
                                         std::string(1, balancing->back()), "'"));
        }
        balancing->pop_back();
      }
      Emit(TokenType::kOperator, text, pos);
      return pos + text.size();
    }
    return Error(pos, absl::StrCat("unexpected char ", PyReprString(s_.substr(pos, 1))));
  }

  absl::StatusOr<size_t> LexString(size_t pos) {
    const char quote = s_[pos];
    size_t i = pos + 1;
    while (i < s_.size() && s_[i] != quote) i += s_[i] == '\\' ? 2 : 1;
    if (i >= s_.size()) return Error(pos, "unterminated string literal");
    ORCA_ASSIGN_OR_RETURN(std::string value, Unescape(pos + 1, i));
    Emit(TokenType::kString, std::move(value), pos);
    return i + 1;
  }

  // Python's "unicode-escape" decoding of a string literal's body.
  absl::StatusOr<std::string> Unescape(size_t begin, size_t end) const {
    std::string out;
    for (size_t i = begin; i < end; ++i) {
      if (s_[i] != '\\' || i + 1 >= end) {
        out.push_back(s_[i]);
        continue;
      }
      const char e = s_[++i];
      switch (e) {
        case '\n':
          break;
        case '\\':
        case '\'':
        case '"':
          out.push_back(e);
          break;
        case 'a':
          out.push_back('\a');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'v':
          out.push_back('\v');
          break;
        case 'x':
        case 'u':
        case 'U': {
          const size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          char32_t cp = 0;
          for (size_t k = 0; k < digits; ++k) {
            const int v = i + 1 + k < end ? HexValue(s_[i + 1 + k]) : -1;
            if (v < 0)
              return Error(i - 1, absl::StrCat("truncated \\", std::string(1, e), " escape"));
            cp = cp * 16 + static_cast<char32_t>(v);
          }
          if (cp > 0x10FFFF) return Error(i - 1, "illegal Unicode character in escape");
          AppendUtf8(cp, &out);
          i += digits;
          break;
        }
        case 'N':
          return Error(i - 1, "\\N{...} escapes are not supported");
        default:
          if (e >= '0' && e <= '7') {
            char32_t cp = static_cast<char32_t>(e - '0');
            for (int k = 0; k < 2 && i + 1 < end && s_[i + 1] >= '0' && s_[i + 1] <= '7'; ++k) {
              cp = cp * 8 + static_cast<char32_t>(s_[++i] - '0');
            }
            AppendUtf8(cp, &out);
          } else {
            out.push_back('\\');
            out.push_back(e);
          }
      }
    }
    return out;
  }

  const std::string& s_;
  SourceMap map_;
  std::vector<Token> tokens_;
};

}  // namespace

int SourceMap::Line(size_t offset) const {
  int line = 1;
  for (size_t i = 0; i < offset && i < source_.size(); ++i) {
    if (source_[i] == '\n') ++line;
  }
  return line;
}

std::string SourceMap::Describe(size_t offset) const {
  if (offset > source_.size()) offset = source_.size();
  const size_t nl = offset == 0 ? std::string::npos : source_.rfind('\n', offset - 1);
  const size_t line_begin = nl == std::string::npos ? 0 : nl + 1;
  const size_t column =
      CodePointCount(std::string_view(source_).substr(line_begin, offset - line_begin)) + 1;
  return absl::StrCat("line ", Line(offset), ", column ", column);
}

std::string NormalizeSource(const std::string& source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out.push_back(source[i]);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

absl::StatusOr<std::vector<Token>> Tokenize(const std::string& source) {
  Lexer lexer(source);
  return lexer.Run();
}

}  // namespace orca::chat_internal
