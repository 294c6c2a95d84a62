// Statement execution and the interpreter services the builtins use.
#include "engine/chat/internal/interpreter.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/chat/internal/builtins.h"
#include "engine/chat/internal/lexer.h"
#include "engine/chat/internal/py_string.h"
#include "engine/common/status_macros.h"

namespace orca::chat_internal {
namespace {

// The loop variable of a `for` statement (jinja2.runtime.LoopContext).
class LoopObject : public Object, public std::enable_shared_from_this<LoopObject> {
 public:
  explicit LoopObject(std::shared_ptr<const std::vector<Value>> items) : items_(std::move(items)) {}

  std::string Repr() const override {
    return absl::StrCat("<LoopContext ", index0_ + 1, "/", items_->size(), ">");
  }

  Value GetAttr(const std::string& name) const override {
    const auto n = static_cast<int64_t>(items_->size());
    const auto i = static_cast<int64_t>(index0_);
    if (name == "index") return Value::Int(i + 1);
    if (name == "index0") return Value::Int(i);
    if (name == "revindex") return Value::Int(n - i);
    if (name == "revindex0") return Value::Int(n - i - 1);
    if (name == "first") return Value::Bool(i == 0);
    if (name == "last") return Value::Bool(i == n - 1);
    if (name == "length") return Value::Int(n);
    if (name == "depth") return Value::Int(1);
    if (name == "depth0") return Value::Int(0);
    if (name == "previtem") {
      return i > 0 ? (*items_)[i - 1] : Value::Undefined("there is no previous item");
    }
    if (name == "nextitem") {
      return i + 1 < n ? (*items_)[i + 1] : Value::Undefined("there is no next item");
    }
    if (name == "cycle" || name == "changed") {
      return Value::Obj(std::make_shared<LoopMethod>(shared_from_this(), name));
    }
    return Object::GetAttr(name);
  }

  void set_index0(size_t i) { index0_ = i; }

 private:
  class LoopMethod : public Object {
   public:
    LoopMethod(std::shared_ptr<const LoopObject> loop, std::string name)
        : loop_(std::move(loop)), name_(std::move(name)) {}
    std::string Repr() const override { return "<bound method LoopContext." + name_ + ">"; }
    bool callable() const override { return true; }
    absl::StatusOr<Value> Call(Interpreter&, CallArgs args) const override {
      if (!args.keyword.empty()) {
        return absl::InvalidArgumentError(name_ + "() got an unexpected keyword argument");
      }
      if (name_ == "cycle") {
        if (args.positional.empty())
          return absl::InvalidArgumentError("no items for cycling given");
        return args.positional[loop_->index0_ % args.positional.size()];
      }
      ORCA_ASSIGN_OR_RETURN(Value current, Value::Seq(std::move(args.positional)));
      const bool changed = !loop_->has_last_changed_ || !Equals(current, loop_->last_changed_);
      loop_->last_changed_ = current;
      loop_->has_last_changed_ = true;
      return Value::Bool(changed);
    }

   private:
    std::shared_ptr<const LoopObject> loop_;
    std::string name_;
  };

  std::shared_ptr<const std::vector<Value>> items_;
  size_t index0_ = 0;
  mutable Value last_changed_;
  mutable bool has_last_changed_ = false;
};

}  // namespace

const Value* Frame::Lookup(const std::string& name) const {
  for (const Frame* f = this; f != nullptr; f = f->parent.get()) {
    for (const auto& [k, v] : f->vars) {
      if (k == name) return &v;
    }
  }
  return nullptr;
}

void Frame::Set(const std::string& name, Value value) {
  for (auto& [k, v] : vars) {
    if (k == name) {
      v = std::move(value);
      return;
    }
  }
  vars.emplace_back(name, std::move(value));
}

std::string MacroObject::Repr() const { return "<Macro " + PyReprString(def_->name) + ">"; }

absl::StatusOr<Value> MacroObject::Call(Interpreter& interpreter, CallArgs args) const {
  return interpreter.CallMacro(*this, std::move(args));
}

Interpreter::Interpreter(const RenderLimits& limits) : limits_(limits) {}

Interpreter::~Interpreter() {
  for (const auto& ns : namespaces_) ns->Clear();
  for (const auto& frame : macro_frames_) frame->vars.clear();
}

absl::Status Interpreter::Step() {
  if (++steps_ > limits_.max_steps) {
    return absl::ResourceExhaustedError(
        absl::StrCat("template exceeded ", limits_.max_steps, " evaluation steps"));
  }
  return absl::OkStatus();
}

absl::Status Interpreter::Charge(size_t n) {
  steps_ += n;
  if (steps_ > limits_.max_steps) {
    return absl::ResourceExhaustedError(
        absl::StrCat("template exceeded ", limits_.max_steps, " evaluation steps"));
  }
  return absl::OkStatus();
}

absl::Status Interpreter::CheckSize(size_t size) const {
  if (size > limits_.max_output_bytes) {
    return absl::ResourceExhaustedError("template built values larger than the output limit");
  }
  return absl::OkStatus();
}

absl::Status Interpreter::Allocate(size_t size) {
  const size_t total_limit = std::max<size_t>(64u << 20, 16 * limits_.max_output_bytes);
  allocated_ += size;
  if (size > limits_.max_output_bytes || allocated_ > total_limit) {
    return absl::ResourceExhaustedError("template built values larger than the output limit");
  }
  return absl::OkStatus();
}

std::shared_ptr<Namespace> Interpreter::NewNamespace() {
  auto ns = std::make_shared<Namespace>();
  namespaces_.push_back(ns);
  return ns;
}

absl::Status Interpreter::Annotate(absl::Status status, size_t offset) const {
  if (status.code() != absl::StatusCode::kInvalidArgument || source_ == nullptr) return status;
  const std::string message(status.message());
  if (message.rfind("line ", 0) == 0) return status;
  return absl::InvalidArgumentError(
      absl::StrCat(SourceMap(*source_).Describe(offset), ": ", message));
}

absl::Status Interpreter::Emit(std::string_view text, std::string* out) {
  if (out->size() + text.size() > limits_.max_output_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("rendered output exceeds ", limits_.max_output_bytes, " bytes"));
  }
  out->append(text);
  return absl::OkStatus();
}

absl::StatusOr<std::string> Interpreter::Render(const Body& body, const Value& context) {
  auto root = std::make_shared<Frame>(nullptr);
  for (auto& [name, fn] : GlobalFunctions()) root->Set(name, std::move(fn));
  if (context.is_dict()) {
    for (const auto& [k, v] : context.dict().items) root->Set(ToStr(k), v);
  }
  macro_frames_.push_back(root);
  std::string out;
  ORCA_RETURN_IF_ERROR(ExecBody(body, root, &out).status());
  return out;
}

absl::StatusOr<Value> Interpreter::EvalConst(const Expr& expr) {
  const_mode_ = true;
  absl::StatusOr<Value> v = Eval(expr, std::make_shared<Frame>(nullptr));
  const_mode_ = false;
  return v;
}

absl::StatusOr<Flow> Interpreter::ExecBody(const Body& body, const FramePtr& frame,
                                           std::string* out) {
  for (const StmtPtr& stmt : body) {
    ORCA_ASSIGN_OR_RETURN(Flow flow, ExecStmt(*stmt, frame, out));
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

absl::Status Interpreter::Assign(const Expr& target, const Value& value, const FramePtr& frame) {
  if (target.kind == ExprKind::kName) {
    frame->Set(target.name, value);
    return absl::OkStatus();
  }
  if (target.kind == ExprKind::kNsRef) {
    const Value* ns = frame->Lookup(target.name);
    if (ns == nullptr || !ns->is_object() || !ns->object()->is_namespace()) {
      return Annotate(absl::InvalidArgumentError("cannot assign attribute on non-namespace object"),
                      target.offset);
    }
    static_cast<Namespace*>(ns->object())->SetAttr(target.attr, value);
    return absl::OkStatus();
  }
  // Tuple unpacking.
  ORCA_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(value));
  if (items.size() != target.args.size()) {
    const std::string message =
        items.size() > target.args.size()
            ? absl::StrCat("too many values to unpack (expected ", target.args.size(), ")")
            : absl::StrCat("not enough values to unpack (expected ", target.args.size(), ", got ",
                           items.size(), ")");
    return Annotate(absl::InvalidArgumentError(message), target.offset);
  }
  for (size_t i = 0; i < items.size(); ++i) {
    ORCA_RETURN_IF_ERROR(Assign(*target.args[i], items[i], frame));
  }
  return absl::OkStatus();
}

absl::StatusOr<Flow> Interpreter::ExecFor(const Stmt& stmt, const FramePtr& frame,
                                          std::string* out) {
  ORCA_ASSIGN_OR_RETURN(Value iterable, Eval(*stmt.expr, frame));
  absl::StatusOr<std::vector<Value>> all = Iterate(iterable);
  if (!all.ok()) return Annotate(all.status(), stmt.expr->offset);
  auto items = std::make_shared<std::vector<Value>>();
  if (stmt.filter == nullptr) {
    *items = std::move(*all);
  } else {
    for (Value& item : *all) {
      ORCA_RETURN_IF_ERROR(Step());
      auto scope = std::make_shared<Frame>(frame);
      ORCA_RETURN_IF_ERROR(Assign(*stmt.target, item, scope));
      ORCA_ASSIGN_OR_RETURN(Value keep, Eval(*stmt.filter, scope));
      if (Truthy(keep)) items->push_back(std::move(item));
    }
  }
  if (items->empty()) return ExecBody(stmt.else_body, frame, out);
  auto loop = std::make_shared<LoopObject>(items);
  const Value loop_value = Value::Obj(loop);
  for (size_t i = 0; i < items->size(); ++i) {
    ORCA_RETURN_IF_ERROR(Step());
    auto scope = std::make_shared<Frame>(frame);
    ORCA_RETURN_IF_ERROR(Assign(*stmt.target, (*items)[i], scope));
    scope->Set("loop", loop_value);
    loop->set_index0(i);
    ORCA_ASSIGN_OR_RETURN(Flow flow, ExecBody(stmt.body, scope, out));
    if (flow == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

absl::StatusOr<Flow> Interpreter::ExecStmt(const Stmt& stmt, const FramePtr& frame,
                                           std::string* out) {
  ORCA_RETURN_IF_ERROR(Step());
  switch (stmt.kind) {
    case StmtKind::kText:
      ORCA_RETURN_IF_ERROR(Emit(stmt.text, out));
      return Flow::kNormal;
    case StmtKind::kOutput: {
      ORCA_ASSIGN_OR_RETURN(Value v, Eval(*stmt.expr, frame));
      ORCA_RETURN_IF_ERROR(Emit(ToStr(v), out));
      return Flow::kNormal;
    }
    case StmtKind::kIf:
      for (const IfBranch& branch : stmt.branches) {
        ORCA_ASSIGN_OR_RETURN(Value cond, Eval(*branch.condition, frame));
        if (Truthy(cond)) return ExecBody(branch.body, frame, out);
      }
      return ExecBody(stmt.else_body, frame, out);
    case StmtKind::kFor:
      return ExecFor(stmt, frame, out);
    case StmtKind::kSet: {
      ORCA_ASSIGN_OR_RETURN(Value v, Eval(*stmt.expr, frame));
      ORCA_RETURN_IF_ERROR(Assign(*stmt.target, v, frame));
      return Flow::kNormal;
    }
    case StmtKind::kSetBlock: {
      std::string captured;
      ORCA_RETURN_IF_ERROR(ExecBody(stmt.body, std::make_shared<Frame>(frame), &captured).status());
      Value v = Value::String(std::move(captured));
      if (stmt.filter != nullptr) {
        ORCA_ASSIGN_OR_RETURN(v, EvalFilter(*stmt.filter, frame, &v));
      }
      ORCA_RETURN_IF_ERROR(Assign(*stmt.target, v, frame));
      return Flow::kNormal;
    }
    case StmtKind::kMacro:
      frame->Set(stmt.macro->name, Value::Obj(std::make_shared<MacroObject>(stmt.macro, frame)));
      macro_frames_.push_back(frame);
      return Flow::kNormal;
    case StmtKind::kCallBlock: {
      const Value caller = Value::Obj(std::make_shared<MacroObject>(stmt.macro, frame));
      macro_frames_.push_back(frame);
      absl::StatusOr<Value> v = EvalCall(*stmt.expr, frame, &caller);
      if (!v.ok()) return Annotate(v.status(), stmt.expr->offset);
      ORCA_RETURN_IF_ERROR(Emit(ToStr(*v), out));
      return Flow::kNormal;
    }
    case StmtKind::kFilterBlock: {
      std::string captured;
      ORCA_RETURN_IF_ERROR(ExecBody(stmt.body, std::make_shared<Frame>(frame), &captured).status());
      const Value subject = Value::String(std::move(captured));
      ORCA_ASSIGN_OR_RETURN(Value v, EvalFilter(*stmt.filter, frame, &subject));
      ORCA_RETURN_IF_ERROR(Emit(ToStr(v), out));
      return Flow::kNormal;
    }
    case StmtKind::kWith: {
      auto scope = std::make_shared<Frame>(frame);
      for (size_t i = 0; i < stmt.targets.size(); ++i) {
        ORCA_ASSIGN_OR_RETURN(Value v, Eval(*stmt.values[i], frame));
        ORCA_RETURN_IF_ERROR(Assign(*stmt.targets[i], v, scope));
      }
      return ExecBody(stmt.body, scope, out);
    }
    case StmtKind::kBreak:
      return Flow::kBreak;
    case StmtKind::kContinue:
      return Flow::kContinue;
    case StmtKind::kScope:
      return ExecBody(stmt.body, frame, out);
  }
  return Flow::kNormal;
}

absl::StatusOr<Value> Interpreter::CallMacro(const MacroObject& macro, CallArgs args) {
  const MacroDef& def = macro.def();
  if (call_depth_ >= limits_.max_call_depth) {
    return absl::ResourceExhaustedError(
        absl::StrCat("macro calls nested deeper than ", limits_.max_call_depth));
  }
  auto scope = std::make_shared<Frame>(macro.closure());
  const size_t n = def.params.size();
  const size_t given = std::min(n, args.positional.size());
  auto take_keyword = [&args](const std::string& name) -> std::optional<Value> {
    for (auto it = args.keyword.begin(); it != args.keyword.end(); ++it) {
      if (it->first == name) {
        Value v = std::move(it->second);
        args.keyword.erase(it);
        return v;
      }
    }
    return std::nullopt;
  };
  std::vector<std::optional<Value>> bound(n);
  for (size_t i = 0; i < given; ++i) bound[i] = args.positional[i];
  for (size_t i = given; i < n; ++i) bound[i] = take_keyword(def.params[i]);
  if (def.uses_caller) {
    std::optional<Value> caller = take_keyword("caller");
    scope->Set("caller", caller ? *caller : Value::Undefined("No caller defined"));
  }
  if (def.catch_kwargs) {
    std::vector<std::pair<Value, Value>> extra;
    for (auto& [k, v] : args.keyword) extra.emplace_back(Value::String(k), std::move(v));
    ORCA_ASSIGN_OR_RETURN(Value kwargs, Value::Dict(std::move(extra)));
    scope->Set("kwargs", kwargs);
  } else if (!args.keyword.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "macro '", def.name, "' takes no keyword argument '", args.keyword.front().first, "'"));
  }
  if (def.catch_varargs) {
    std::vector<Value> rest(args.positional.begin() + static_cast<std::ptrdiff_t>(given),
                            args.positional.end());
    ORCA_ASSIGN_OR_RETURN(Value varargs, Value::Seq(std::move(rest), SeqKind::kTuple));
    scope->Set("varargs", varargs);
  } else if (args.positional.size() > n) {
    return absl::InvalidArgumentError(
        absl::StrCat("macro '", def.name, "' takes not more than ", n, " argument(s)"));
  }
  const size_t first_default = n - def.defaults.size();
  for (size_t i = 0; i < n; ++i) {
    if (bound[i]) {
      scope->Set(def.params[i], *bound[i]);
    } else if (i >= first_default) {
      ORCA_ASSIGN_OR_RETURN(Value v, Eval(*def.defaults[i - first_default], scope));
      scope->Set(def.params[i], v);
    } else {
      scope->Set(def.params[i], Value::Undefined(absl::StrCat("parameter '", def.params[i],
                                                              "' was not provided")));
    }
  }
  ++call_depth_;
  std::string out;
  absl::StatusOr<Flow> flow = ExecBody(def.body, scope, &out);
  --call_depth_;
  ORCA_RETURN_IF_ERROR(flow.status());
  return Value::String(std::move(out));
}

}  // namespace orca::chat_internal
