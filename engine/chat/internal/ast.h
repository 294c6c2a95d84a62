// The syntax tree of a parsed template, mirroring jinja2.nodes for the supported subset.
// Immutable after parsing; the interpreter only reads it.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/chat/internal/value.h"

namespace orca::chat_internal {

enum class ExprKind : uint8_t {
  kConst,     // constant
  kName,      // name
  kNsRef,     // name.attr as an assignment target
  kList,      // args: items
  kTuple,     // args: items
  kDict,      // args: key, value, key, value, ...
  kGetAttr,   // args[0].name
  kGetItem,   // args[0][args[1]]
  kSlice,     // args: start, stop, step (each may be null); only inside kGetItem
  kCall,      // args[0](args[1:], kwargs, *dyn_args, **dyn_kwargs)
  kFilter,    // args[0] | name(args[1:], kwargs); args[0] null in filter blocks
  kTest,      // args[0] is [not] name(args[1:], kwargs)
  kNeg,       // -args[0]
  kPos,       // +args[0]
  kNot,       // not args[0]
  kBinary,    // args[0] op args[1]
  kAnd,       // args[0] and args[1]
  kOr,        // args[0] or args[1]
  kConcat,    // args joined with ~
  kCompare,   // args[0] compare_ops[0] args[1] compare_ops[1] args[2] ...
  kCondExpr,  // args[1] if args[0] else args[2] (args[2] may be null)
};

enum class BinaryOp : uint8_t { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow };
enum class CompareOp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn };

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  ExprKind kind = ExprKind::kConst;
  size_t offset = 0;  // source position, for error messages
  Value constant;
  std::string name;  // kName, kNsRef (the namespace), kGetAttr, kFilter, kTest
  std::string attr;  // kNsRef
  BinaryOp op = BinaryOp::kAdd;
  std::vector<CompareOp> compare_ops;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  ExprPtr dyn_args;
  ExprPtr dyn_kwargs;
  int height = 1;  // 1 + the greatest height of the children (bounds recursion)
};

enum class StmtKind : uint8_t {
  kText,         // template data
  kOutput,       // {{ expr }} / {% print expr %}
  kIf,           // branches, else_body
  kFor,          // target in iter [if filter] body [else else_body]
  kSet,          // target = expr
  kSetBlock,     // {% set target [| filter] %}body{% endset %}
  kMacro,        // {% macro name(params) %}body{% endmacro %}
  kCallBlock,    // {% call(params) expr %}body{% endcall %}
  kFilterBlock,  // {% filter chain %}body{% endfilter %}
  kWith,         // {% with targets = values %}body{% endwith %}
  kBreak,
  kContinue,
  kScope,  // body rendered as is ({% generation %})
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct IfBranch {
  ExprPtr condition;
  Body body;
};

// A macro or call-block signature and body.
struct MacroDef {
  std::string name;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;  // for the last defaults.size() params
  Body body;
  bool catch_varargs = false;  // the body reads `varargs`
  bool catch_kwargs = false;   // the body reads `kwargs`
  bool uses_caller = false;    // the body reads `caller`
};

struct Stmt {
  StmtKind kind = StmtKind::kText;
  size_t offset = 0;
  std::string text;                // kText
  ExprPtr expr;                    // kOutput, kFor (iterable), kSet, kCallBlock (the call)
  ExprPtr target;                  // kFor, kSet, kSetBlock
  ExprPtr filter;                  // kFor (condition), kSetBlock / kFilterBlock (filter chain)
  std::vector<IfBranch> branches;  // kIf
  std::vector<ExprPtr> targets;    // kWith
  std::vector<ExprPtr> values;     // kWith
  Body body;
  Body else_body;
  std::shared_ptr<MacroDef> macro;  // kMacro, kCallBlock
};

}  // namespace orca::chat_internal
