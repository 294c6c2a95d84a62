// Splits a Jinja2 template into tokens the way jinja2.lexer does with the Hugging Face
// settings (trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False):
// template data, tag delimiters and the expression tokens inside tags. Whitespace
// control (`{%-`, `-%}`, `{%+`, `+%}`) and `{% raw %}` are resolved here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace orca::chat_internal {

enum class TokenType : uint8_t {
  kData,
  kVariableBegin,
  kVariableEnd,
  kBlockBegin,
  kBlockEnd,
  kName,
  kString,
  kInteger,
  kFloat,
  kOperator,
  kEof,
};

struct Token {
  TokenType type = TokenType::kEof;
  std::string value;  // data text, name, decoded string literal or operator
  int64_t int_value = 0;
  double float_value = 0;
  size_t offset = 0;  // byte offset into the normalized source
};

// Maps byte offsets of the normalized source to 1-based line and column (in code points).
class SourceMap {
 public:
  explicit SourceMap(const std::string& source) : source_(source) {}
  // Returns "line L, column C".
  std::string Describe(size_t offset) const;
  int Line(size_t offset) const;

 private:
  const std::string& source_;
};

// Returns `source` with "\r\n" and "\r" turned into "\n" and one trailing newline
// removed, as Jinja2 does before lexing.
std::string NormalizeSource(const std::string& source);

// Tokenizes a normalized source. Fails with InvalidArgument naming the position.
absl::StatusOr<std::vector<Token>> Tokenize(const std::string& source);

}  // namespace orca::chat_internal
