// Statement parsing (jinja2.parser.Parser.subparse / parse_statement and friends).
#include <functional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/chat/internal/builtins.h"
#include "engine/chat/internal/parser.h"
#include "engine/common/status_macros.h"

namespace orca::chat_internal {
namespace {

ExprPtr NewExpr(ExprKind kind, size_t offset) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->offset = offset;
  return e;
}

StmtPtr NewStmt(StmtKind kind, size_t offset) {
  auto s = std::make_unique<Stmt>();
  s->kind = kind;
  s->offset = offset;
  return s;
}

// Calls `f` on every expression reachable from `body`.
void VisitExprs(const Body& body, const std::function<void(const Expr&)>& f);

void VisitExpr(const Expr* e, const std::function<void(const Expr&)>& f) {
  if (e == nullptr) return;
  f(*e);
  for (const ExprPtr& a : e->args) VisitExpr(a.get(), f);
  for (const auto& [k, v] : e->kwargs) VisitExpr(v.get(), f);
  VisitExpr(e->dyn_args.get(), f);
  VisitExpr(e->dyn_kwargs.get(), f);
}

void VisitExprs(const Body& body, const std::function<void(const Expr&)>& f) {
  for (const StmtPtr& s : body) {
    VisitExpr(s->expr.get(), f);
    VisitExpr(s->target.get(), f);
    VisitExpr(s->filter.get(), f);
    for (const IfBranch& b : s->branches) {
      VisitExpr(b.condition.get(), f);
      VisitExprs(b.body, f);
    }
    for (const ExprPtr& t : s->targets) VisitExpr(t.get(), f);
    for (const ExprPtr& v : s->values) VisitExpr(v.get(), f);
    VisitExprs(s->body, f);
    VisitExprs(s->else_body, f);
    if (s->macro != nullptr && s->kind == StmtKind::kMacro) {
      for (const ExprPtr& d : s->macro->defaults) VisitExpr(d.get(), f);
      VisitExprs(s->macro->body, f);
    }
  }
}

// Marks which of the special names a macro body reads.
void ScanMacroBody(MacroDef* macro) {
  VisitExprs(macro->body, [macro](const Expr& e) {
    if (e.kind != ExprKind::kName) return;
    if (e.name == "varargs") macro->catch_varargs = true;
    if (e.name == "kwargs") macro->catch_kwargs = true;
    if (e.name == "caller") macro->uses_caller = true;
  });
}

bool CanAssign(const Expr& e) {
  if (e.kind == ExprKind::kName || e.kind == ExprKind::kNsRef) return true;
  if (e.kind != ExprKind::kTuple) return false;
  for (const ExprPtr& item : e.args) {
    if (item->kind == ExprKind::kNsRef || !CanAssign(*item)) return false;
  }
  return true;
}

// Jinja2's compile-time check of filter and test names: unknown names fail, except in
// "soft" code (inside `if` statements and conditional expressions), where the error
// waits until the filter runs. Scopes (loop bodies, macros, blocks) are never soft.
class NameValidator {
 public:
  explicit NameValidator(const SourceMap& map) : map_(map) {}

  absl::Status Body(const chat_internal::Body& body, bool soft) {
    for (const StmtPtr& s : body) ORCA_RETURN_IF_ERROR(Stmt(*s, soft));
    return absl::OkStatus();
  }

 private:
  absl::Status Stmt(const chat_internal::Stmt& s, bool soft) {
    switch (s.kind) {
      case StmtKind::kIf:
        for (const IfBranch& b : s.branches) {
          ORCA_RETURN_IF_ERROR(Expr(b.condition.get(), true));
          ORCA_RETURN_IF_ERROR(Body(b.body, true));
        }
        return Body(s.else_body, true);
      case StmtKind::kFor:
        ORCA_RETURN_IF_ERROR(Expr(s.expr.get(), soft));
        ORCA_RETURN_IF_ERROR(Expr(s.filter.get(), false));
        ORCA_RETURN_IF_ERROR(Body(s.body, false));
        return Body(s.else_body, soft);
      case StmtKind::kSetBlock:
      case StmtKind::kFilterBlock:
        ORCA_RETURN_IF_ERROR(Expr(s.filter.get(), false));
        return Body(s.body, false);
      case StmtKind::kMacro:
      case StmtKind::kCallBlock:
        ORCA_RETURN_IF_ERROR(Expr(s.expr.get(), soft));
        for (const ExprPtr& d : s.macro->defaults) ORCA_RETURN_IF_ERROR(Expr(d.get(), false));
        return Body(s.macro->body, false);
      case StmtKind::kWith:
        for (const ExprPtr& v : s.values) ORCA_RETURN_IF_ERROR(Expr(v.get(), soft));
        return Body(s.body, false);
      default:
        ORCA_RETURN_IF_ERROR(Expr(s.expr.get(), soft));
        return Body(s.body, soft);
    }
  }

  absl::Status Expr(const chat_internal::Expr* e, bool soft) {
    if (e == nullptr) return absl::OkStatus();
    if (!soft && e->kind == ExprKind::kFilter && !IsKnownFilter(e->name)) {
      return Fail(e->offset, absl::StrCat("no filter named '", e->name, "'"));
    }
    if (!soft && e->kind == ExprKind::kTest && !IsKnownTest(e->name)) {
      return Fail(e->offset, absl::StrCat("no test named '", e->name, "'"));
    }
    const bool child_soft = soft || e->kind == ExprKind::kCondExpr;
    for (const ExprPtr& a : e->args) ORCA_RETURN_IF_ERROR(Expr(a.get(), child_soft));
    for (const auto& [k, v] : e->kwargs) ORCA_RETURN_IF_ERROR(Expr(v.get(), child_soft));
    ORCA_RETURN_IF_ERROR(Expr(e->dyn_args.get(), child_soft));
    return Expr(e->dyn_kwargs.get(), child_soft);
  }

  absl::Status Fail(size_t offset, const std::string& message) const {
    return absl::InvalidArgumentError(absl::StrCat(map_.Describe(offset), ": ", message));
  }

  const SourceMap& map_;
};

}  // namespace

absl::StatusOr<Body> ParseTemplate(const std::string& source, const std::vector<Token>& tokens) {
  Parser parser(source, tokens);
  return parser.ParseAll();
}

absl::StatusOr<Body> Parser::ParseAll() {
  ORCA_ASSIGN_OR_RETURN(Body body, Subparse({}));
  if (Cur().type != TokenType::kEof) return Fail(absl::StrCat("unexpected ", Describe(Cur())));
  ORCA_RETURN_IF_ERROR(NameValidator(map_).Body(body, false));
  return body;
}

absl::StatusOr<Body> Parser::Subparse(const std::vector<std::string>& end_names) {
  Body body;
  end_stack_.push_back(end_names);
  while (Cur().type != TokenType::kEof) {
    const Token& t = Cur();
    if (t.type == TokenType::kData) {
      StmtPtr s = NewStmt(StmtKind::kText, t.offset);
      s->text = t.value;
      body.push_back(std::move(s));
      Next();
    } else if (t.type == TokenType::kVariableBegin) {
      const size_t offset = t.offset;
      Next();
      ORCA_ASSIGN_OR_RETURN(ExprPtr expr, ParseTuple(false, true, {}, false));
      ORCA_RETURN_IF_ERROR(ExpectType(TokenType::kVariableEnd));
      StmtPtr s = NewStmt(StmtKind::kOutput, offset);
      s->expr = std::move(expr);
      body.push_back(std::move(s));
    } else if (t.type == TokenType::kBlockBegin) {
      Next();
      if (Cur().type == TokenType::kName) {
        for (const std::string& end : end_names) {
          if (Cur().value == end) {
            end_stack_.pop_back();
            return body;
          }
        }
      }
      ORCA_ASSIGN_OR_RETURN(StmtPtr s, ParseStatement());
      ORCA_RETURN_IF_ERROR(ExpectType(TokenType::kBlockEnd));
      body.push_back(std::move(s));
    } else {
      return Fail(absl::StrCat("unexpected ", Describe(t)));
    }
  }
  end_stack_.pop_back();
  return body;
}

absl::StatusOr<Body> Parser::ParseStatements(const std::vector<std::string>& end_names,
                                             bool drop_needle) {
  SkipOp(":");
  ORCA_RETURN_IF_ERROR(ExpectType(TokenType::kBlockEnd));
  ORCA_ASSIGN_OR_RETURN(Body body, Subparse(end_names));
  if (Cur().type == TokenType::kEof) {
    std::vector<std::string> quoted;
    for (const std::string& n : end_names) quoted.push_back("'" + n + "'");
    return Fail(
        absl::StrCat("unexpected end of template; expected ", absl::StrJoin(quoted, " or ")));
  }
  if (drop_needle) Next();
  return body;
}

absl::StatusOr<StmtPtr> Parser::ParseStatement() {
  if (Cur().type != TokenType::kName) return Fail("tag name expected");
  ORCA_RETURN_IF_ERROR(Enter());
  const std::string tag = Cur().value;
  absl::StatusOr<StmtPtr> result;
  if (tag == "for") {
    result = ParseFor();
  } else if (tag == "if") {
    result = ParseIf();
  } else if (tag == "set") {
    result = ParseSet();
  } else if (tag == "macro") {
    result = ParseMacro();
  } else if (tag == "call") {
    result = ParseCallBlock();
  } else if (tag == "filter") {
    result = ParseFilterBlock();
  } else if (tag == "with") {
    result = ParseWith();
  } else if (tag == "print") {
    result = ParsePrint();
  } else if (tag == "break" || tag == "continue") {
    if (loop_depth_ == 0) return Fail(absl::StrCat("'", tag, "' outside of a loop"));
    result = NewStmt(tag == "break" ? StmtKind::kBreak : StmtKind::kContinue, Cur().offset);
    Next();
  } else if (tag == "generation") {
    StmtPtr s = NewStmt(StmtKind::kScope, Cur().offset);
    Next();
    ORCA_ASSIGN_OR_RETURN(s->body, ParseStatements({"endgeneration"}, true));
    result = std::move(s);
  } else if (tag == "block" || tag == "extends" || tag == "include" || tag == "import" ||
             tag == "from" || tag == "autoescape" || tag == "raw") {
    return Fail(absl::StrCat("the '", tag, "' tag is not supported in chat templates"));
  } else {
    std::string message = absl::StrCat("unknown tag '", tag, "'");
    if (!end_stack_.empty() && !end_stack_.back().empty()) {
      absl::StrAppend(&message, "; expected '", absl::StrJoin(end_stack_.back(), "' or '"), "'");
    }
    return Fail(message);
  }
  Leave();
  return result;
}

absl::StatusOr<StmtPtr> Parser::ParseFor() {
  StmtPtr s = NewStmt(StmtKind::kFor, Cur().offset);
  Next();
  ORCA_ASSIGN_OR_RETURN(s->target, ParseAssignTarget(true, false, {"in"}, false));
  if (!SkipName("in")) return Fail(absl::StrCat("expected 'in', got ", Describe(Cur())));
  ORCA_ASSIGN_OR_RETURN(s->expr, ParseTuple(false, false, {"recursive"}, false));
  if (SkipName("if")) {
    ORCA_ASSIGN_OR_RETURN(s->filter, ParseExpression());
  }
  if (IsName("recursive")) return Fail("recursive loops are not supported");
  ++loop_depth_;
  absl::StatusOr<Body> body = ParseStatements({"endfor", "else"}, false);
  --loop_depth_;
  if (!body.ok()) return body.status();
  s->body = std::move(*body);
  const bool has_else = IsName("else");
  Next();
  if (has_else) {
    ORCA_ASSIGN_OR_RETURN(s->else_body, ParseStatements({"endfor"}, true));
  }
  return s;
}

absl::StatusOr<StmtPtr> Parser::ParseIf() {
  StmtPtr s = NewStmt(StmtKind::kIf, Cur().offset);
  Next();
  while (true) {
    IfBranch branch;
    ORCA_ASSIGN_OR_RETURN(branch.condition, ParseTuple(false, false, {}, false));
    ORCA_ASSIGN_OR_RETURN(branch.body, ParseStatements({"elif", "else", "endif"}, false));
    s->branches.push_back(std::move(branch));
    const std::string needle = Cur().value;
    Next();
    if (needle == "elif") continue;
    if (needle == "else") {
      ORCA_ASSIGN_OR_RETURN(s->else_body, ParseStatements({"endif"}, true));
    }
    break;
  }
  return s;
}

absl::StatusOr<StmtPtr> Parser::ParseSet() {
  const size_t offset = Cur().offset;
  Next();
  ORCA_ASSIGN_OR_RETURN(ExprPtr target, ParseAssignTarget(true, false, {}, true));
  if (SkipOp("=")) {
    StmtPtr s = NewStmt(StmtKind::kSet, offset);
    s->target = std::move(target);
    ORCA_ASSIGN_OR_RETURN(s->expr, ParseTuple(false, true, {}, false));
    return s;
  }
  StmtPtr s = NewStmt(StmtKind::kSetBlock, offset);
  s->target = std::move(target);
  if (IsOp("|")) {
    ORCA_ASSIGN_OR_RETURN(s->filter, ParseFilter(nullptr, false));
  }
  absl::StatusOr<Body> body = ParseStatements({"endset"}, true);
  if (!body.ok()) return body.status();
  s->body = std::move(*body);
  return s;
}

absl::Status Parser::ParseSignature(MacroDef* macro) {
  ORCA_RETURN_IF_ERROR(ExpectOp("("));
  while (!IsOp(")")) {
    if (!macro->params.empty()) ORCA_RETURN_IF_ERROR(ExpectOp(","));
    ORCA_ASSIGN_OR_RETURN(std::string name, ExpectNameToken());
    if (SkipOp("=")) {
      ORCA_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
      macro->defaults.push_back(std::move(value));
    } else if (!macro->defaults.empty()) {
      return Fail("non-default argument follows default argument");
    }
    macro->params.push_back(std::move(name));
  }
  return ExpectOp(")");
}

absl::Status Parser::ParseMacroBody(MacroDef* macro, const char* end_tag) {
  // A macro body is a new scope for loop controls: `break` cannot leave the macro.
  const int outer_loops = loop_depth_;
  loop_depth_ = 0;
  absl::StatusOr<Body> body = ParseStatements({end_tag}, true);
  loop_depth_ = outer_loops;
  if (!body.ok()) return body.status();
  macro->body = std::move(*body);
  ScanMacroBody(macro);
  return absl::OkStatus();
}

absl::StatusOr<StmtPtr> Parser::ParseMacro() {
  StmtPtr s = NewStmt(StmtKind::kMacro, Cur().offset);
  Next();
  auto macro = std::make_shared<MacroDef>();
  ORCA_ASSIGN_OR_RETURN(macro->name, ExpectNameToken());
  ORCA_RETURN_IF_ERROR(ParseSignature(macro.get()));
  ORCA_RETURN_IF_ERROR(ParseMacroBody(macro.get(), "endmacro"));
  s->macro = std::move(macro);
  return s;
}

absl::StatusOr<StmtPtr> Parser::ParseCallBlock() {
  StmtPtr s = NewStmt(StmtKind::kCallBlock, Cur().offset);
  Next();
  auto macro = std::make_shared<MacroDef>();
  macro->name = "caller";
  if (IsOp("(")) ORCA_RETURN_IF_ERROR(ParseSignature(macro.get()));
  ORCA_ASSIGN_OR_RETURN(s->expr, ParseExpression());
  if (s->expr->kind != ExprKind::kCall) return FailAt(s->offset, "expected call");
  ORCA_RETURN_IF_ERROR(ParseMacroBody(macro.get(), "endcall"));
  s->macro = std::move(macro);
  return s;
}

absl::StatusOr<StmtPtr> Parser::ParseFilterBlock() {
  StmtPtr s = NewStmt(StmtKind::kFilterBlock, Cur().offset);
  Next();
  ORCA_ASSIGN_OR_RETURN(s->filter, ParseFilter(nullptr, true));
  ORCA_ASSIGN_OR_RETURN(s->body, ParseStatements({"endfilter"}, true));
  return s;
}

absl::StatusOr<StmtPtr> Parser::ParseWith() {
  StmtPtr s = NewStmt(StmtKind::kWith, Cur().offset);
  Next();
  while (Cur().type != TokenType::kBlockEnd) {
    if (!s->targets.empty()) ORCA_RETURN_IF_ERROR(ExpectOp(","));
    ORCA_ASSIGN_OR_RETURN(ExprPtr target, ParseAssignTarget(true, false, {}, false));
    ORCA_RETURN_IF_ERROR(ExpectOp("="));
    ORCA_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
    s->targets.push_back(std::move(target));
    s->values.push_back(std::move(value));
  }
  ORCA_ASSIGN_OR_RETURN(s->body, ParseStatements({"endwith"}, true));
  return s;
}

absl::StatusOr<StmtPtr> Parser::ParsePrint() {
  StmtPtr s = NewStmt(StmtKind::kScope, Cur().offset);
  Next();
  while (Cur().type != TokenType::kBlockEnd) {
    if (!s->body.empty()) ORCA_RETURN_IF_ERROR(ExpectOp(","));
    StmtPtr out = NewStmt(StmtKind::kOutput, Cur().offset);
    ORCA_ASSIGN_OR_RETURN(out->expr, ParseExpression());
    s->body.push_back(std::move(out));
  }
  return s;
}

absl::StatusOr<ExprPtr> Parser::ParseAssignTarget(bool with_tuple, bool name_only,
                                                  const std::vector<std::string>& extra_end,
                                                  bool with_namespace) {
  ExprPtr target;
  if (with_namespace && Look().type == TokenType::kOperator && Look().value == ".") {
    target = NewExpr(ExprKind::kNsRef, Cur().offset);
    ORCA_ASSIGN_OR_RETURN(target->name, ExpectNameToken());
    Next();  // the dot
    ORCA_ASSIGN_OR_RETURN(target->attr, ExpectNameToken());
  } else if (name_only) {
    target = NewExpr(ExprKind::kName, Cur().offset);
    ORCA_ASSIGN_OR_RETURN(target->name, ExpectNameToken());
  } else if (with_tuple) {
    ORCA_ASSIGN_OR_RETURN(target, ParseTuple(true, true, extra_end, false));
  } else {
    ORCA_ASSIGN_OR_RETURN(target, ParsePrimary());
  }
  if (!CanAssign(*target)) return FailAt(target->offset, "can't assign to this expression");
  return target;
}

}  // namespace orca::chat_internal
