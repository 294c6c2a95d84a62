#include "engine/chat/internal/optimizer.h"

#include "engine/chat/internal/interpreter.h"

namespace orca::chat_internal {
namespace {

// jinja2.utils... has_safe_repr: the values a Const node may hold.
bool HasSafeRepr(const Value& v) {
  switch (v.type()) {
    case Value::Type::kNone:
    case Value::Type::kBool:
    case Value::Type::kInt:
    case Value::Type::kFloat:
    case Value::Type::kString:
      return true;
    case Value::Type::kSeq:
      if (!v.is_indexable_seq()) return false;
      for (const Value& item : v.seq().items) {
        if (!HasSafeRepr(item)) return false;
      }
      return true;
    case Value::Type::kDict:
      for (const auto& [k, val] : v.dict().items) {
        if (!HasSafeRepr(k) || !HasSafeRepr(val)) return false;
      }
      return true;
    default:
      return false;
  }
}

// The node types whose compilation tries constant folding (@optimizeconst).
bool Foldable(ExprKind kind) {
  switch (kind) {
    case ExprKind::kBinary:
    case ExprKind::kAnd:
    case ExprKind::kOr:
    case ExprKind::kNeg:
    case ExprKind::kPos:
    case ExprKind::kNot:
    case ExprKind::kConcat:
    case ExprKind::kCompare:
    case ExprKind::kGetAttr:
    case ExprKind::kGetItem:
    case ExprKind::kFilter:
    case ExprKind::kTest:
    case ExprKind::kCondExpr:
      return true;
    default:
      return false;
  }
}

class Folder {
 public:
  Folder() : interpreter_(Limits()) {}

  void Body(chat_internal::Body* body) {
    for (StmtPtr& s : *body) Stmt(s.get());
  }

 private:
  static RenderLimits Limits() {
    RenderLimits limits;
    limits.max_steps = 20000;
    return limits;
  }

  void Stmt(chat_internal::Stmt* s) {
    Expr(&s->expr);
    if (s->kind == StmtKind::kFor) Expr(&s->filter);  // block filter chains have no subject
    for (IfBranch& b : s->branches) {
      Expr(&b.condition);
      Body(&b.body);
    }
    for (ExprPtr& v : s->values) Expr(&v);
    Body(&s->body);
    Body(&s->else_body);
    if (s->macro != nullptr) {
      for (ExprPtr& d : s->macro->defaults) Expr(&d);
      Body(&s->macro->body);
    }
    if (s->kind == StmtKind::kOutput) {
      absl::StatusOr<Value> v = interpreter_.EvalConst(*s->expr);
      if (v.ok()) {
        s->kind = StmtKind::kText;
        s->text = ToStr(*v);
        s->expr.reset();
      }
    }
  }

  void Expr(ExprPtr* slot) {
    chat_internal::Expr* e = slot->get();
    if (e == nullptr || e->kind == ExprKind::kConst) return;
    for (ExprPtr& a : e->args) Expr(&a);
    for (auto& [k, v] : e->kwargs) Expr(&v);
    Expr(&e->dyn_args);
    Expr(&e->dyn_kwargs);
    if (!Foldable(e->kind)) return;
    absl::StatusOr<Value> v = interpreter_.EvalConst(*e);
    if (!v.ok() || !HasSafeRepr(*v)) return;
    auto folded = std::make_unique<chat_internal::Expr>();
    folded->kind = ExprKind::kConst;
    folded->offset = e->offset;
    folded->constant = std::move(*v);
    *slot = std::move(folded);
  }

  Interpreter interpreter_;
};

}  // namespace

void FoldConstants(chat_internal::Body* body) {
  Folder folder;
  folder.Body(body);
}

}  // namespace orca::chat_internal
