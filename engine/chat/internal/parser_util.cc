// Token-stream helpers and guards of the parser.
#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/chat/internal/parser.h"
#include "engine/chat/internal/py_string.h"

namespace orca::chat_internal {

bool Parser::IsOp(const char* op) const {
  return Cur().type == TokenType::kOperator && Cur().value == op;
}

bool Parser::IsName(const char* name) const {
  return Cur().type == TokenType::kName && Cur().value == name;
}

bool Parser::SkipOp(const char* op) {
  if (!IsOp(op)) return false;
  Next();
  return true;
}

bool Parser::SkipName(const char* name) {
  if (!IsName(name)) return false;
  Next();
  return true;
}

absl::Status Parser::FailAt(size_t offset, const std::string& message) const {
  return absl::InvalidArgumentError(absl::StrCat(map_.Describe(offset), ": ", message));
}

absl::Status Parser::Fail(const std::string& message) const {
  return FailAt(Cur().offset, message);
}

std::string Parser::Describe(const Token& t) const {
  switch (t.type) {
    case TokenType::kEof:
      return "end of template";
    case TokenType::kBlockEnd:
      return "end of statement block";
    case TokenType::kVariableEnd:
      return "end of print statement";
    case TokenType::kBlockBegin:
      return "begin of statement block";
    case TokenType::kVariableBegin:
      return "begin of print statement";
    case TokenType::kData:
      return "template data";
    case TokenType::kString:
      return PyReprString(t.value);
    default:
      return "'" +
             (t.type == TokenType::kInteger || t.type == TokenType::kFloat ? t.value : t.value) +
             "'";
  }
}

absl::Status Parser::ExpectType(TokenType type) {
  if (Cur().type == type) {
    Next();
    return absl::OkStatus();
  }
  Token wanted;
  wanted.type = type;
  return Fail(absl::StrCat("expected ", Describe(wanted), ", got ", Describe(Cur())));
}

absl::Status Parser::ExpectOp(const char* op) {
  if (SkipOp(op)) return absl::OkStatus();
  return Fail(absl::StrCat("expected '", op, "', got ", Describe(Cur())));
}

absl::StatusOr<std::string> Parser::ExpectNameToken() {
  if (Cur().type != TokenType::kName) {
    return Fail(absl::StrCat("expected a name, got ", Describe(Cur())));
  }
  std::string name = Cur().value;
  Next();
  return name;
}

absl::Status Parser::Seal(Expr* e) const {
  int height = 0;
  for (const ExprPtr& a : e->args) {
    if (a != nullptr) height = std::max(height, a->height);
  }
  for (const auto& [k, v] : e->kwargs) height = std::max(height, v->height);
  if (e->dyn_args != nullptr) height = std::max(height, e->dyn_args->height);
  if (e->dyn_kwargs != nullptr) height = std::max(height, e->dyn_kwargs->height);
  e->height = height + 1;
  if (e->height > kMaxExprHeight) {
    return FailAt(e->offset,
                  absl::StrCat("expression nested deeper than ", kMaxExprHeight, " levels"));
  }
  return absl::OkStatus();
}

absl::Status Parser::Enter() {
  if (++depth_ > kMaxNesting) {
    --depth_;
    return Fail(absl::StrCat("template nested deeper than ", kMaxNesting, " levels"));
  }
  return absl::OkStatus();
}

}  // namespace orca::chat_internal
