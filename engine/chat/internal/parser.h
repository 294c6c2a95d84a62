// A recursive-descent parser mirroring jinja2.parser: statements in parser_stmt.cc,
// expressions in parser_expr.cc. Filter and test names are checked after parsing, as
// Jinja2's compiler does: unknown names are errors except inside `if` statements and
// conditional expressions, where the check waits until the filter runs.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/chat/internal/ast.h"
#include "engine/chat/internal/lexer.h"

namespace orca::chat_internal {

// Parses the tokens of `source` (as returned by Tokenize) into a template body.
absl::StatusOr<Body> ParseTemplate(const std::string& source, const std::vector<Token>& tokens);

class Parser {
 public:
  Parser(const std::string& source, const std::vector<Token>& tokens)
      : map_(source), tokens_(tokens) {}

  absl::StatusOr<Body> ParseAll();

 private:
  // Token stream.
  const Token& Cur() const { return tokens_[pos_]; }
  const Token& Look() const { return tokens_[pos_ + 1 < tokens_.size() ? pos_ + 1 : pos_]; }
  void Next() {
    if (pos_ + 1 < tokens_.size()) ++pos_;
  }
  bool IsOp(const char* op) const;
  bool IsName(const char* name) const;
  bool SkipOp(const char* op);
  bool SkipName(const char* name);
  absl::Status Fail(const std::string& message) const;
  absl::Status FailAt(size_t offset, const std::string& message) const;
  absl::Status ExpectType(TokenType type);
  absl::Status ExpectOp(const char* op);
  absl::StatusOr<std::string> ExpectNameToken();
  std::string Describe(const Token& t) const;

  // Statements.
  absl::StatusOr<Body> Subparse(const std::vector<std::string>& end_names);
  absl::StatusOr<Body> ParseStatements(const std::vector<std::string>& end_names, bool drop_needle);
  absl::StatusOr<StmtPtr> ParseStatement();
  absl::StatusOr<StmtPtr> ParseFor();
  absl::StatusOr<StmtPtr> ParseIf();
  absl::StatusOr<StmtPtr> ParseSet();
  absl::StatusOr<StmtPtr> ParseMacro();
  absl::StatusOr<StmtPtr> ParseCallBlock();
  // Parses the statements of a macro or call block up to `end_tag` into macro->body.
  absl::Status ParseMacroBody(MacroDef* macro, const char* end_tag);
  absl::StatusOr<StmtPtr> ParseFilterBlock();
  absl::StatusOr<StmtPtr> ParseWith();
  absl::StatusOr<StmtPtr> ParsePrint();
  absl::Status ParseSignature(MacroDef* macro);
  absl::StatusOr<ExprPtr> ParseAssignTarget(bool with_tuple, bool name_only,
                                            const std::vector<std::string>& extra_end,
                                            bool with_namespace);

  // Expressions.
  absl::StatusOr<ExprPtr> ParseExpression(bool with_condexpr = true);
  absl::StatusOr<ExprPtr> ParseCondExpr();
  absl::StatusOr<ExprPtr> ParseOr();
  absl::StatusOr<ExprPtr> ParseAnd();
  absl::StatusOr<ExprPtr> ParseNot();
  absl::StatusOr<ExprPtr> ParseCompare();
  absl::StatusOr<ExprPtr> ParseMath1();
  absl::StatusOr<ExprPtr> ParseConcat();
  absl::StatusOr<ExprPtr> ParseMath2();
  absl::StatusOr<ExprPtr> ParsePow();
  absl::StatusOr<ExprPtr> ParseUnary(bool with_filter);
  absl::StatusOr<ExprPtr> ParsePrimary();
  absl::StatusOr<ExprPtr> ParseTuple(bool simplified, bool with_condexpr,
                                     const std::vector<std::string>& extra_end,
                                     bool explicit_parentheses);
  absl::StatusOr<ExprPtr> ParseList();
  absl::StatusOr<ExprPtr> ParseDict();
  absl::StatusOr<ExprPtr> ParsePostfix(ExprPtr node);
  absl::StatusOr<ExprPtr> ParseFilterExpr(ExprPtr node);
  absl::StatusOr<ExprPtr> ParseSubscript(ExprPtr node);
  absl::StatusOr<ExprPtr> ParseSubscribed();
  absl::Status ParseCallArgs(Expr* call);
  absl::StatusOr<ExprPtr> ParseCall(ExprPtr node);
  absl::StatusOr<ExprPtr> ParseFilter(ExprPtr node, bool start_inline);
  absl::StatusOr<ExprPtr> ParseTest(ExprPtr node);
  bool IsTupleEnd(const std::vector<std::string>& extra_end) const;

  // Sets e->height from its children; fails when it exceeds kMaxExprHeight.
  absl::Status Seal(Expr* e) const;
  // Guards the recursion depth (nested expressions and statements).
  absl::Status Enter();
  void Leave() { --depth_; }

  SourceMap map_;
  const std::vector<Token>& tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;  // for `break` / `continue`
  std::vector<std::vector<std::string>> end_stack_;
};

// Nesting deeper than these is a parse error: they bound the recursion of the parser,
// the interpreter and the tree's destructor.
inline constexpr int kMaxNesting = 64;      // statements and parenthesized expressions
inline constexpr int kMaxExprHeight = 160;  // expression trees (chains like a + b + c)

}  // namespace orca::chat_internal
