// Expression parsing (jinja2.parser.Parser.parse_expression and below).
#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/chat/internal/parser.h"
#include "engine/chat/internal/py_string.h"
#include "engine/common/status_macros.h"

namespace orca::chat_internal {
namespace {

ExprPtr NewExpr(ExprKind kind, size_t offset) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->offset = offset;
  return e;
}

ExprPtr Binary(ExprKind kind, ExprPtr left, ExprPtr right) {
  ExprPtr e = NewExpr(kind, left->offset);
  e->args.push_back(std::move(left));
  e->args.push_back(std::move(right));
  return e;
}

}  // namespace

absl::StatusOr<ExprPtr> Parser::ParseExpression(bool with_condexpr) {
  return with_condexpr ? ParseCondExpr() : ParseOr();
}

absl::StatusOr<ExprPtr> Parser::ParseCondExpr() {
  ORCA_ASSIGN_OR_RETURN(ExprPtr expr, ParseOr());
  while (IsName("if")) {
    Next();
    ExprPtr cond_expr = NewExpr(ExprKind::kCondExpr, expr->offset);
    absl::StatusOr<ExprPtr> test = ParseOr();
    if (!test.ok()) return test.status();
    ExprPtr otherwise;
    if (SkipName("else")) {
      absl::StatusOr<ExprPtr> e = ParseCondExpr();
      if (!e.ok()) return e.status();
      otherwise = std::move(*e);
    }
    cond_expr->args.push_back(std::move(*test));
    cond_expr->args.push_back(std::move(expr));
    cond_expr->args.push_back(std::move(otherwise));
    ORCA_RETURN_IF_ERROR(Seal(cond_expr.get()));
    expr = std::move(cond_expr);
  }
  return expr;
}

absl::StatusOr<ExprPtr> Parser::ParseOr() {
  ORCA_ASSIGN_OR_RETURN(ExprPtr left, ParseAnd());
  while (SkipName("or")) {
    ORCA_ASSIGN_OR_RETURN(ExprPtr right, ParseAnd());
    left = Binary(ExprKind::kOr, std::move(left), std::move(right));
    ORCA_RETURN_IF_ERROR(Seal(left.get()));
  }
  return left;
}

absl::StatusOr<ExprPtr> Parser::ParseAnd() {
  ORCA_ASSIGN_OR_RETURN(ExprPtr left, ParseNot());
  while (SkipName("and")) {
    ORCA_ASSIGN_OR_RETURN(ExprPtr right, ParseNot());
    left = Binary(ExprKind::kAnd, std::move(left), std::move(right));
    ORCA_RETURN_IF_ERROR(Seal(left.get()));
  }
  return left;
}

absl::StatusOr<ExprPtr> Parser::ParseNot() {
  if (!IsName("not")) return ParseCompare();
  ORCA_RETURN_IF_ERROR(Enter());
  ExprPtr e = NewExpr(ExprKind::kNot, Cur().offset);
  Next();
  ORCA_ASSIGN_OR_RETURN(ExprPtr operand, ParseNot());
  e->args.push_back(std::move(operand));
  ORCA_RETURN_IF_ERROR(Seal(e.get()));
  Leave();
  return e;
}

absl::StatusOr<ExprPtr> Parser::ParseCompare() {
  ORCA_ASSIGN_OR_RETURN(ExprPtr expr, ParseMath1());
  ExprPtr compare;
  while (true) {
    CompareOp op;
    if (IsOp("==")) {
      op = CompareOp::kEq;
    } else if (IsOp("!=")) {
      op = CompareOp::kNe;
    } else if (IsOp("<")) {
      op = CompareOp::kLt;
    } else if (IsOp("<=")) {
      op = CompareOp::kLe;
    } else if (IsOp(">")) {
      op = CompareOp::kGt;
    } else if (IsOp(">=")) {
      op = CompareOp::kGe;
    } else if (IsName("in")) {
      op = CompareOp::kIn;
    } else if (IsName("not") && Look().type == TokenType::kName && Look().value == "in") {
      op = CompareOp::kNotIn;
      Next();
    } else {
      break;
    }
    Next();
    ORCA_ASSIGN_OR_RETURN(ExprPtr right, ParseMath1());
    if (compare == nullptr) {
      compare = NewExpr(ExprKind::kCompare, expr->offset);
      compare->args.push_back(std::move(expr));
    }
    compare->compare_ops.push_back(op);
    compare->args.push_back(std::move(right));
  }
  if (compare == nullptr) return expr;
  ORCA_RETURN_IF_ERROR(Seal(compare.get()));
  return compare;
}

absl::StatusOr<ExprPtr> Parser::ParseMath1() {
  ORCA_ASSIGN_OR_RETURN(ExprPtr left, ParseConcat());
  while (IsOp("+") || IsOp("-")) {
    const BinaryOp op = IsOp("+") ? BinaryOp::kAdd : BinaryOp::kSub;
    Next();
    ORCA_ASSIGN_OR_RETURN(ExprPtr right, ParseConcat());
    left = Binary(ExprKind::kBinary, std::move(left), std::move(right));
    left->op = op;
    ORCA_RETURN_IF_ERROR(Seal(left.get()));
  }
  return left;
}

absl::StatusOr<ExprPtr> Parser::ParseConcat() {
  ORCA_ASSIGN_OR_RETURN(ExprPtr first, ParseMath2());
  if (!IsOp("~")) return first;
  ExprPtr concat = NewExpr(ExprKind::kConcat, first->offset);
  concat->args.push_back(std::move(first));
  while (SkipOp("~")) {
    ORCA_ASSIGN_OR_RETURN(ExprPtr next, ParseMath2());
    concat->args.push_back(std::move(next));
  }
  ORCA_RETURN_IF_ERROR(Seal(concat.get()));
  return concat;
}

absl::StatusOr<ExprPtr> Parser::ParseMath2() {
  ORCA_ASSIGN_OR_RETURN(ExprPtr left, ParsePow());
  while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
    const BinaryOp op = IsOp("*")    ? BinaryOp::kMul
                        : IsOp("/")  ? BinaryOp::kDiv
                        : IsOp("//") ? BinaryOp::kFloorDiv
                                     : BinaryOp::kMod;
    Next();
    ORCA_ASSIGN_OR_RETURN(ExprPtr right, ParsePow());
    left = Binary(ExprKind::kBinary, std::move(left), std::move(right));
    left->op = op;
    ORCA_RETURN_IF_ERROR(Seal(left.get()));
  }
  return left;
}

absl::StatusOr<ExprPtr> Parser::ParsePow() {
  ORCA_ASSIGN_OR_RETURN(ExprPtr left, ParseUnary(true));
  while (SkipOp("**")) {
    ORCA_ASSIGN_OR_RETURN(ExprPtr right, ParseUnary(true));
    left = Binary(ExprKind::kBinary, std::move(left), std::move(right));
    left->op = BinaryOp::kPow;
    ORCA_RETURN_IF_ERROR(Seal(left.get()));
  }
  return left;
}

absl::StatusOr<ExprPtr> Parser::ParseUnary(bool with_filter) {
  ORCA_RETURN_IF_ERROR(Enter());
  ExprPtr node;
  if (IsOp("-") || IsOp("+")) {
    node = NewExpr(IsOp("-") ? ExprKind::kNeg : ExprKind::kPos, Cur().offset);
    Next();
    ORCA_ASSIGN_OR_RETURN(ExprPtr operand, ParseUnary(false));
    node->args.push_back(std::move(operand));
    ORCA_RETURN_IF_ERROR(Seal(node.get()));
  } else {
    ORCA_ASSIGN_OR_RETURN(node, ParsePrimary());
  }
  ORCA_ASSIGN_OR_RETURN(node, ParsePostfix(std::move(node)));
  if (with_filter) {
    ORCA_ASSIGN_OR_RETURN(node, ParseFilterExpr(std::move(node)));
  }
  Leave();
  return node;
}

absl::StatusOr<ExprPtr> Parser::ParsePrimary() {
  const Token& t = Cur();
  if (t.type == TokenType::kName) {
    ExprPtr e;
    if (t.value == "true" || t.value == "True" || t.value == "false" || t.value == "False") {
      e = NewExpr(ExprKind::kConst, t.offset);
      e->constant = Value::Bool(t.value == "true" || t.value == "True");
    } else if (t.value == "none" || t.value == "None") {
      e = NewExpr(ExprKind::kConst, t.offset);
      e->constant = Value::None();
    } else {
      e = NewExpr(ExprKind::kName, t.offset);
      e->name = t.value;
    }
    Next();
    return e;
  }
  if (t.type == TokenType::kString) {
    ExprPtr e = NewExpr(ExprKind::kConst, t.offset);
    std::string text;
    while (Cur().type == TokenType::kString) {
      text += Cur().value;
      Next();
    }
    e->constant = Value::String(std::move(text));
    return e;
  }
  if (t.type == TokenType::kInteger || t.type == TokenType::kFloat) {
    ExprPtr e = NewExpr(ExprKind::kConst, t.offset);
    e->constant =
        t.type == TokenType::kInteger ? Value::Int(t.int_value) : Value::Float(t.float_value);
    Next();
    return e;
  }
  if (IsOp("(")) {
    Next();
    ORCA_ASSIGN_OR_RETURN(ExprPtr e, ParseTuple(false, true, {}, true));
    ORCA_RETURN_IF_ERROR(ExpectOp(")"));
    return e;
  }
  if (IsOp("[")) return ParseList();
  if (IsOp("{")) return ParseDict();
  return Fail(absl::StrCat("unexpected ", Describe(t)));
}

bool Parser::IsTupleEnd(const std::vector<std::string>& extra_end) const {
  if (Cur().type == TokenType::kVariableEnd || Cur().type == TokenType::kBlockEnd || IsOp(")")) {
    return true;
  }
  if (Cur().type != TokenType::kName) return false;
  return std::find(extra_end.begin(), extra_end.end(), Cur().value) != extra_end.end();
}

absl::StatusOr<ExprPtr> Parser::ParseTuple(bool simplified, bool with_condexpr,
                                           const std::vector<std::string>& extra_end,
                                           bool explicit_parentheses) {
  const size_t offset = Cur().offset;
  std::vector<ExprPtr> args;
  bool is_tuple = false;
  while (true) {
    if (!args.empty()) ORCA_RETURN_IF_ERROR(ExpectOp(","));
    if (IsTupleEnd(extra_end)) break;
    absl::StatusOr<ExprPtr> item = simplified ? ParsePrimary() : ParseExpression(with_condexpr);
    if (!item.ok()) return item.status();
    args.push_back(std::move(*item));
    if (IsOp(",")) {
      is_tuple = true;
    } else {
      break;
    }
  }
  if (!is_tuple) {
    if (!args.empty()) return std::move(args[0]);
    if (!explicit_parentheses) {
      return Fail(absl::StrCat("expected an expression, got ", Describe(Cur())));
    }
  }
  ExprPtr tuple = NewExpr(ExprKind::kTuple, offset);
  tuple->args = std::move(args);
  ORCA_RETURN_IF_ERROR(Seal(tuple.get()));
  return tuple;
}

absl::StatusOr<ExprPtr> Parser::ParseList() {
  ExprPtr list = NewExpr(ExprKind::kList, Cur().offset);
  ORCA_RETURN_IF_ERROR(ExpectOp("["));
  while (!IsOp("]")) {
    if (!list->args.empty()) ORCA_RETURN_IF_ERROR(ExpectOp(","));
    if (IsOp("]")) break;
    ORCA_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression());
    list->args.push_back(std::move(item));
  }
  ORCA_RETURN_IF_ERROR(ExpectOp("]"));
  ORCA_RETURN_IF_ERROR(Seal(list.get()));
  return list;
}

absl::StatusOr<ExprPtr> Parser::ParseDict() {
  ExprPtr dict = NewExpr(ExprKind::kDict, Cur().offset);
  ORCA_RETURN_IF_ERROR(ExpectOp("{"));
  while (!IsOp("}")) {
    if (!dict->args.empty()) ORCA_RETURN_IF_ERROR(ExpectOp(","));
    if (IsOp("}")) break;
    ORCA_ASSIGN_OR_RETURN(ExprPtr key, ParseExpression());
    ORCA_RETURN_IF_ERROR(ExpectOp(":"));
    ORCA_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
    dict->args.push_back(std::move(key));
    dict->args.push_back(std::move(value));
  }
  ORCA_RETURN_IF_ERROR(ExpectOp("}"));
  ORCA_RETURN_IF_ERROR(Seal(dict.get()));
  return dict;
}

absl::StatusOr<ExprPtr> Parser::ParsePostfix(ExprPtr node) {
  while (true) {
    if (IsOp(".") || IsOp("[")) {
      ORCA_ASSIGN_OR_RETURN(node, ParseSubscript(std::move(node)));
    } else if (IsOp("(")) {
      ORCA_ASSIGN_OR_RETURN(node, ParseCall(std::move(node)));
    } else {
      return node;
    }
  }
}

absl::StatusOr<ExprPtr> Parser::ParseFilterExpr(ExprPtr node) {
  while (true) {
    if (IsOp("|")) {
      ORCA_ASSIGN_OR_RETURN(node, ParseFilter(std::move(node), false));
    } else if (IsName("is")) {
      ORCA_ASSIGN_OR_RETURN(node, ParseTest(std::move(node)));
    } else if (IsOp("(")) {
      ORCA_ASSIGN_OR_RETURN(node, ParseCall(std::move(node)));
    } else {
      return node;
    }
  }
}

absl::StatusOr<ExprPtr> Parser::ParseSubscript(ExprPtr node) {
  const size_t offset = Cur().offset;
  if (SkipOp(".")) {
    const Token& attr = Cur();
    if (attr.type == TokenType::kName) {
      ExprPtr e = NewExpr(ExprKind::kGetAttr, offset);
      e->name = attr.value;
      e->args.push_back(std::move(node));
      Next();
      ORCA_RETURN_IF_ERROR(Seal(e.get()));
      return e;
    }
    if (attr.type != TokenType::kInteger) return Fail("expected name or number");
    ExprPtr e = NewExpr(ExprKind::kGetItem, offset);
    ExprPtr index = NewExpr(ExprKind::kConst, attr.offset);
    index->constant = Value::Int(attr.int_value);
    Next();
    e->args.push_back(std::move(node));
    e->args.push_back(std::move(index));
    ORCA_RETURN_IF_ERROR(Seal(e.get()));
    return e;
  }
  ORCA_RETURN_IF_ERROR(ExpectOp("["));
  std::vector<ExprPtr> args;
  while (!IsOp("]")) {
    if (!args.empty()) ORCA_RETURN_IF_ERROR(ExpectOp(","));
    ORCA_ASSIGN_OR_RETURN(ExprPtr arg, ParseSubscribed());
    args.push_back(std::move(arg));
  }
  ORCA_RETURN_IF_ERROR(ExpectOp("]"));
  ExprPtr e = NewExpr(ExprKind::kGetItem, offset);
  e->args.push_back(std::move(node));
  if (args.size() == 1) {
    e->args.push_back(std::move(args[0]));
  } else {
    ExprPtr tuple = NewExpr(ExprKind::kTuple, offset);
    tuple->args = std::move(args);
    ORCA_RETURN_IF_ERROR(Seal(tuple.get()));
    e->args.push_back(std::move(tuple));
  }
  ORCA_RETURN_IF_ERROR(Seal(e.get()));
  return e;
}

absl::StatusOr<ExprPtr> Parser::ParseSubscribed() {
  const size_t offset = Cur().offset;
  ExprPtr slice = NewExpr(ExprKind::kSlice, offset);
  if (SkipOp(":")) {
    slice->args.push_back(nullptr);
  } else {
    ORCA_ASSIGN_OR_RETURN(ExprPtr node, ParseExpression());
    if (!IsOp(":")) return node;
    Next();
    slice->args.push_back(std::move(node));
  }
  auto optional_expr = [this]() -> absl::StatusOr<ExprPtr> {
    if (IsOp("]") || IsOp(",")) return ExprPtr();
    return ParseExpression();
  };
  if (IsOp(":")) {
    slice->args.push_back(nullptr);
  } else {
    ORCA_ASSIGN_OR_RETURN(ExprPtr stop, optional_expr());
    slice->args.push_back(std::move(stop));
  }
  if (SkipOp(":")) {
    ORCA_ASSIGN_OR_RETURN(ExprPtr step, optional_expr());
    slice->args.push_back(std::move(step));
  } else {
    slice->args.push_back(nullptr);
  }
  ORCA_RETURN_IF_ERROR(Seal(slice.get()));
  return slice;
}

absl::Status Parser::ParseCallArgs(Expr* call) {
  const size_t offset = Cur().offset;
  ORCA_RETURN_IF_ERROR(ExpectOp("("));
  auto ensure = [&](bool ok) -> absl::Status {
    return ok ? absl::OkStatus() : FailAt(offset, "invalid syntax for function call expression");
  };
  bool require_comma = false;
  while (!IsOp(")")) {
    if (require_comma) {
      ORCA_RETURN_IF_ERROR(ExpectOp(","));
      if (IsOp(")")) break;
    }
    if (SkipOp("*")) {
      ORCA_RETURN_IF_ERROR(ensure(call->dyn_args == nullptr && call->dyn_kwargs == nullptr));
      ORCA_ASSIGN_OR_RETURN(call->dyn_args, ParseExpression());
    } else if (SkipOp("**")) {
      ORCA_RETURN_IF_ERROR(ensure(call->dyn_kwargs == nullptr));
      ORCA_ASSIGN_OR_RETURN(call->dyn_kwargs, ParseExpression());
    } else if (Cur().type == TokenType::kName && Look().type == TokenType::kOperator &&
               Look().value == "=") {
      ORCA_RETURN_IF_ERROR(ensure(call->dyn_kwargs == nullptr));
      std::string key = Cur().value;
      Next();
      Next();
      ORCA_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
      call->kwargs.emplace_back(std::move(key), std::move(value));
    } else {
      ORCA_RETURN_IF_ERROR(
          ensure(call->dyn_args == nullptr && call->dyn_kwargs == nullptr && call->kwargs.empty()));
      ORCA_ASSIGN_OR_RETURN(ExprPtr arg, ParseExpression());
      call->args.push_back(std::move(arg));
    }
    require_comma = true;
  }
  return ExpectOp(")");
}

absl::StatusOr<ExprPtr> Parser::ParseCall(ExprPtr node) {
  ExprPtr call = NewExpr(ExprKind::kCall, Cur().offset);
  call->args.push_back(std::move(node));
  ORCA_RETURN_IF_ERROR(ParseCallArgs(call.get()));
  ORCA_RETURN_IF_ERROR(Seal(call.get()));
  return call;
}

absl::StatusOr<ExprPtr> Parser::ParseFilter(ExprPtr node, bool start_inline) {
  while (IsOp("|") || start_inline) {
    if (!start_inline) Next();
    const size_t offset = Cur().offset;
    ORCA_ASSIGN_OR_RETURN(std::string name, ExpectNameToken());
    while (SkipOp(".")) {
      ORCA_ASSIGN_OR_RETURN(std::string part, ExpectNameToken());
      name += "." + part;
    }
    ExprPtr filter = NewExpr(ExprKind::kFilter, offset);
    filter->name = std::move(name);
    filter->args.push_back(std::move(node));
    if (IsOp("(")) ORCA_RETURN_IF_ERROR(ParseCallArgs(filter.get()));
    ORCA_RETURN_IF_ERROR(Seal(filter.get()));
    node = std::move(filter);
    start_inline = false;
  }
  return node;
}

absl::StatusOr<ExprPtr> Parser::ParseTest(ExprPtr node) {
  const size_t offset = Cur().offset;
  Next();  // is
  const bool negated = SkipName("not");
  const size_t name_offset = Cur().offset;
  ORCA_ASSIGN_OR_RETURN(std::string name, ExpectNameToken());
  while (SkipOp(".")) {
    ORCA_ASSIGN_OR_RETURN(std::string part, ExpectNameToken());
    name += "." + part;
  }
  ExprPtr test = NewExpr(ExprKind::kTest, name_offset);
  test->name = std::move(name);
  test->args.push_back(std::move(node));
  const TokenType type = Cur().type;
  if (IsOp("(")) {
    ORCA_RETURN_IF_ERROR(ParseCallArgs(test.get()));
  } else if ((type == TokenType::kName || type == TokenType::kString ||
              type == TokenType::kInteger || type == TokenType::kFloat || IsOp("[") || IsOp("{")) &&
             !IsName("else") && !IsName("or") && !IsName("and")) {
    if (IsName("is")) return Fail("you cannot chain multiple tests with is");
    ORCA_ASSIGN_OR_RETURN(ExprPtr arg, ParsePrimary());
    ORCA_ASSIGN_OR_RETURN(arg, ParsePostfix(std::move(arg)));
    test->args.push_back(std::move(arg));
  }
  ORCA_RETURN_IF_ERROR(Seal(test.get()));
  if (!negated) return test;
  ExprPtr negation = NewExpr(ExprKind::kNot, offset);
  negation->args.push_back(std::move(test));
  ORCA_RETURN_IF_ERROR(Seal(negation.get()));
  return negation;
}

}  // namespace orca::chat_internal
