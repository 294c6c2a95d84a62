// Executes a parsed template: statements (interpreter.cc), expressions
// (interpreter_expr.cc). One Interpreter renders once; it holds all per-render state
// (scopes, budgets), so a parsed template can render on many threads at the same time.
//
// Scoping follows Jinja2: `for` iterations, macro calls, `with` and block assignments get
// their own scope that reads through to the enclosing one; `set` writes the innermost
// scope; `if` opens none.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/chat/internal/ast.h"
#include "engine/chat/internal/value.h"

namespace orca::chat_internal {

struct Frame {
  explicit Frame(std::shared_ptr<Frame> parent_frame) : parent(std::move(parent_frame)) {}
  // Returns the innermost binding of `name`, or nullptr.
  const Value* Lookup(const std::string& name) const;
  void Set(const std::string& name, Value value);

  std::shared_ptr<Frame> parent;
  std::vector<std::pair<std::string, Value>> vars;
};
using FramePtr = std::shared_ptr<Frame>;

enum class Flow { kNormal, kBreak, kContinue };

// Budgets that stop runaway templates; exceeding one fails the render.
struct RenderLimits {
  size_t max_output_bytes = 1 << 20;
  size_t max_steps = 5'000'000;  // expressions evaluated + statements executed + iterations
  int max_call_depth = 32;       // nested macro calls
};

// A macro (or the `caller` of a call block) closed over the scope that defined it.
class MacroObject : public Object {
 public:
  MacroObject(std::shared_ptr<const MacroDef> def, FramePtr closure)
      : def_(std::move(def)), closure_(std::move(closure)) {}
  std::string Repr() const override;
  bool callable() const override { return true; }
  absl::StatusOr<Value> Call(Interpreter& interpreter, CallArgs args) const override;
  const MacroDef& def() const { return *def_; }
  const FramePtr& closure() const { return closure_; }

 private:
  std::shared_ptr<const MacroDef> def_;
  FramePtr closure_;
};

class Interpreter {
 public:
  explicit Interpreter(const RenderLimits& limits);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Renders `body` with the items of `context` (a dict) as global variables.
  absl::StatusOr<std::string> Render(const Body& body, const Value& context);
  // Evaluates `expr` as Jinja2's compile-time constant folding does (Node.as_const):
  // fails with FailedPrecondition when it reads a variable, calls a function or uses a
  // context filter; slices of constants yield undefined instead of failing.
  absl::StatusOr<Value> EvalConst(const Expr& expr);

  // Services for the builtins.
  absl::Status Step();
  // Accounts for a newly created string or list of `size` bytes/items; fails past the
  // per-value limit (max_output_bytes) or the per-render total.
  absl::Status Allocate(size_t size);
  // Fails when a value under construction already exceeds the per-value limit.
  absl::Status CheckSize(size_t size) const;
  // Counts `n` units of work against max_steps (bulk operations on big values).
  absl::Status Charge(size_t n);
  absl::StatusOr<Value> Call(const Value& callee, CallArgs args);
  absl::StatusOr<Value> CallMacro(const MacroObject& macro, CallArgs args);
  // Jinja's sandboxed `obj.name` and `obj[key]`.
  absl::StatusOr<Value> GetAttr(const Value& obj, const std::string& name);
  absl::StatusOr<Value> GetItem(const Value& obj, const Value& key);
  // Python iter(v) materialized.
  absl::StatusOr<std::vector<Value>> Iterate(const Value& v);
  std::shared_ptr<Namespace> NewNamespace();
  const RenderLimits& limits() const { return limits_; }
  // The normalized template source, for positions in error messages.
  void set_source(const std::string* source) { source_ = source; }

 private:
  absl::StatusOr<Flow> ExecBody(const Body& body, const FramePtr& frame, std::string* out);
  absl::StatusOr<Flow> ExecStmt(const Stmt& stmt, const FramePtr& frame, std::string* out);
  absl::StatusOr<Flow> ExecFor(const Stmt& stmt, const FramePtr& frame, std::string* out);
  absl::Status Emit(std::string_view text, std::string* out);
  absl::Status Assign(const Expr& target, const Value& value, const FramePtr& frame);

  absl::StatusOr<Value> Eval(const Expr& expr, const FramePtr& frame);
  absl::StatusOr<Value> EvalNode(const Expr& expr, const FramePtr& frame);
  absl::StatusOr<Value> EvalCall(const Expr& expr, const FramePtr& frame,
                                 const Value* extra_caller);
  absl::StatusOr<CallArgs> EvalArgs(const Expr& expr, size_t first, const FramePtr& frame);
  absl::StatusOr<Value> EvalFilter(const Expr& expr, const FramePtr& frame,
                                   const Value* block_subject);
  absl::StatusOr<Value> EvalSlice(const Value& obj, const Expr& slice, const FramePtr& frame);
  absl::StatusOr<Value> EvalCompare(const Expr& expr, const FramePtr& frame);
  absl::StatusOr<Value> Binary(BinaryOp op, const Value& a, const Value& b);
  absl::Status Annotate(absl::Status status, size_t offset) const;

  RenderLimits limits_;
  const std::string* source_ = nullptr;
  size_t steps_ = 0;
  size_t allocated_ = 0;
  int call_depth_ = 0;
  bool const_mode_ = false;
  // Objects that can close reference cycles; cleared when the render ends.
  std::vector<std::shared_ptr<Namespace>> namespaces_;
  std::vector<FramePtr> macro_frames_;
};

}  // namespace orca::chat_internal
