// Expression evaluation with Python semantics, and the sandboxed attribute/item access.
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/chat/internal/builtins.h"
#include "engine/chat/internal/filters_internal.h"
#include "engine/chat/internal/format.h"
#include "engine/chat/internal/interpreter.h"
#include "engine/chat/internal/py_string.h"
#include "engine/common/status_macros.h"

namespace orca::chat_internal {
namespace {

absl::Status TypeError(const std::string& message) { return absl::InvalidArgumentError(message); }

absl::Status OperandError(const char* op, const Value& a, const Value& b) {
  return TypeError(absl::StrCat("unsupported operand type(s) for ", op, ": '", TypeName(a),
                                "' and '", TypeName(b), "'"));
}

absl::Status Overflow() { return absl::InvalidArgumentError("integer overflow"); }

// Python's float floor division and modulo (Objects/floatobject.c float_divmod).
void FloatDivmod(double vx, double wx, double* floordiv, double* mod) {
  double m = std::fmod(vx, wx);
  double div = (vx - m) / wx;
  if (m != 0) {
    if ((wx < 0) != (m < 0)) {
      m += wx;
      div -= 1.0;
    }
  } else {
    m = std::copysign(0.0, wx);
  }
  double fd;
  if (div != 0) {
    fd = std::floor(div);
    if (div - fd > 0.5) fd += 1.0;
  } else {
    fd = std::copysign(0.0, vx / wx);
  }
  *floordiv = fd;
  *mod = m;
}

bool IsDictAttribute(const std::string& name) {
  static const char* const kNames[] = {"clear", "copy",    "fromkeys",   "get",    "items", "keys",
                                       "pop",   "popitem", "setdefault", "update", "values"};
  for (const char* n : kNames) {
    if (name == n) return true;
  }
  return false;
}

// Python's PySlice_AdjustIndices; returns the selected indices.
std::vector<size_t> SliceIndices(int64_t len, std::optional<int64_t> start,
                                 std::optional<int64_t> stop, int64_t step) {
  auto adjust = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x += len;
      if (x < 0) x = step < 0 ? -1 : 0;
    } else if (x >= len) {
      x = step < 0 ? len - 1 : len;
    }
    return x;
  };
  const int64_t b = adjust(start, step < 0 ? len - 1 : 0);
  const int64_t e = adjust(stop, step < 0 ? -1 : len);
  std::vector<size_t> out;
  for (int64_t i = b; step > 0 ? i < e : i > e; i += step) out.push_back(static_cast<size_t>(i));
  return out;
}

}  // namespace

absl::StatusOr<Value> Interpreter::GetAttr(const Value& obj, const std::string& name) {
  switch (obj.type()) {
    case Value::Type::kUndefined:
      return UndefinedError(obj);
    case Value::Type::kDict:
      if (IsDictAttribute(name)) return GetMethod(obj, name);
      if (const Value* v = obj.dict().FindString(name)) return *v;
      return Value::Undefined(absl::StrCat("'dict object' has no attribute '", name, "'"));
    case Value::Type::kString:
    case Value::Type::kSeq: {
      Value m = GetMethod(obj, name);
      if (m.is_object()) return m;
      return Value::Undefined(
          absl::StrCat("'", TypeName(obj), " object' has no attribute '", name, "'"));
    }
    case Value::Type::kObject:
      return obj.object()->GetAttr(name);
    case Value::Type::kBool:
    case Value::Type::kInt:
    case Value::Type::kFloat:
      if (name == "real" || name == "numerator")
        return obj.is_float() ? obj : Value::Int(obj.as_int());
      if (name == "imag") return obj.is_float() ? Value::Float(0.0) : Value::Int(0);
      if (name == "denominator" && !obj.is_float()) return Value::Int(1);
      [[fallthrough]];
    default:
      return Value::Undefined(
          absl::StrCat("'", TypeName(obj), " object' has no attribute '", name, "'"));
  }
}

absl::StatusOr<Value> Interpreter::GetItem(const Value& obj, const Value& key) {
  if (obj.is_undefined()) return UndefinedError(obj);
  if (obj.is_dict()) {
    if (const Value* v = obj.dict().Find(key)) return *v;
  } else if ((obj.is_indexable_seq() || obj.is_string()) && key.is_integral()) {
    int64_t i = key.as_int();
    if (obj.is_string()) {
      const std::vector<char32_t> cps = DecodeUtf8(obj.str());
      const auto n = static_cast<int64_t>(cps.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return Value::String(EncodeUtf8(cps, i, i + 1), obj.safe());
    } else {
      const auto& items = obj.seq().items;
      const auto n = static_cast<int64_t>(items.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return items[static_cast<size_t>(i)];
    }
    return Value::Undefined(
        absl::StrCat(Repr(obj).substr(0, 40), " has no element ", key.as_int()));
  }
  if (key.is_string()) {
    if (obj.is_dict()) {
      if (IsDictAttribute(key.str())) return GetMethod(obj, key.str());
      return Value::Undefined(absl::StrCat("'dict object' has no attribute '", key.str(), "'"));
    }
    return GetAttr(obj, key.str());
  }
  return Value::Undefined(absl::StrCat("'", TypeName(obj), " object' has no element ", Repr(key)));
}

absl::StatusOr<std::vector<Value>> Interpreter::Iterate(const Value& v) {
  // Materializing is work proportional to the size: charge it.
  if (v.is_string()) ORCA_RETURN_IF_ERROR(Charge(v.str().size() / 16));
  if (v.is_seq()) ORCA_RETURN_IF_ERROR(Charge(v.seq().items.size() / 16));
  if (v.is_dict()) ORCA_RETURN_IF_ERROR(Charge(v.dict().items.size() / 16));
  switch (v.type()) {
    case Value::Type::kUndefined:
      return std::vector<Value>();
    case Value::Type::kString: {
      std::vector<Value> out;
      for (char32_t cp : DecodeUtf8(v.str())) {
        std::string s;
        AppendUtf8(cp, &s);
        out.push_back(Value::String(std::move(s)));
      }
      return out;
    }
    case Value::Type::kSeq:
      return v.seq().items;
    case Value::Type::kDict: {
      std::vector<Value> keys;
      keys.reserve(v.dict().items.size());
      for (const auto& [k, val] : v.dict().items) keys.push_back(k);
      return keys;
    }
    default:
      return TypeError(absl::StrCat("'", TypeName(v), "' object is not iterable"));
  }
}

absl::StatusOr<Value> Interpreter::Call(const Value& callee, CallArgs args) {
  ORCA_RETURN_IF_ERROR(Step());
  if (callee.is_undefined()) return UndefinedError(callee);
  if (callee.is_object() && callee.object()->callable()) {
    return callee.object()->Call(*this, std::move(args));
  }
  return TypeError(absl::StrCat("'", TypeName(callee), "' object is not callable"));
}

absl::StatusOr<Value> Interpreter::Eval(const Expr& expr, const FramePtr& frame) {
  ORCA_RETURN_IF_ERROR(Step());
  absl::StatusOr<Value> v = EvalNode(expr, frame);
  if (!v.ok()) return Annotate(v.status(), expr.offset);
  return v;
}

absl::StatusOr<CallArgs> Interpreter::EvalArgs(const Expr& expr, size_t first,
                                               const FramePtr& frame) {
  CallArgs args;
  for (size_t i = first; i < expr.args.size(); ++i) {
    ORCA_ASSIGN_OR_RETURN(Value v, Eval(*expr.args[i], frame));
    args.positional.push_back(std::move(v));
  }
  if (expr.dyn_args != nullptr) {
    ORCA_ASSIGN_OR_RETURN(Value v, Eval(*expr.dyn_args, frame));
    ORCA_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
    for (Value& item : items) args.positional.push_back(std::move(item));
  }
  for (const auto& [name, value_expr] : expr.kwargs) {
    ORCA_ASSIGN_OR_RETURN(Value v, Eval(*value_expr, frame));
    args.keyword.emplace_back(name, std::move(v));
  }
  if (expr.dyn_kwargs != nullptr) {
    ORCA_ASSIGN_OR_RETURN(Value v, Eval(*expr.dyn_kwargs, frame));
    if (!v.is_dict()) return TypeError("argument after ** must be a mapping");
    for (const auto& [k, val] : v.dict().items) {
      if (!k.is_string()) return TypeError("keywords must be strings");
      args.keyword.emplace_back(k.str(), val);
    }
  }
  return args;
}

absl::StatusOr<Value> Interpreter::EvalCall(const Expr& expr, const FramePtr& frame,
                                            const Value* extra_caller) {
  ORCA_ASSIGN_OR_RETURN(Value callee, Eval(*expr.args[0], frame));
  ORCA_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(expr, 1, frame));
  if (extra_caller != nullptr) args.keyword.emplace_back("caller", *extra_caller);
  return Call(callee, std::move(args));
}

absl::StatusOr<Value> Interpreter::EvalFilter(const Expr& expr, const FramePtr& frame,
                                              const Value* block_subject) {
  if (const_mode_ && (expr.name == "map" || expr.name == "select" || expr.name == "reject" ||
                      expr.name == "selectattr" || expr.name == "rejectattr")) {
    return absl::FailedPreconditionError("context filters are not constant");
  }
  Value subject;
  if (expr.args[0] == nullptr) {
    subject = *block_subject;
  } else if (expr.args[0]->kind == ExprKind::kFilter) {
    absl::StatusOr<Value> inner = EvalFilter(*expr.args[0], frame, block_subject);
    if (!inner.ok()) return Annotate(inner.status(), expr.args[0]->offset);
    subject = std::move(*inner);
  } else {
    ORCA_ASSIGN_OR_RETURN(subject, Eval(*expr.args[0], frame));
  }
  ORCA_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(expr, 1, frame));
  absl::StatusOr<Value> v = ApplyFilter(*this, expr.name, subject, std::move(args));
  if (!v.ok()) return Annotate(v.status(), expr.offset);
  return v;
}

absl::StatusOr<Value> Interpreter::EvalSlice(const Value& obj, const Expr& slice,
                                             const FramePtr& frame) {
  if (const_mode_ && !obj.is_undefined()) {
    // Constant folding goes through the sandbox's getitem, which turns TypeErrors into
    // undefined; only ValueErrors (a zero step) still fail.
    const_mode_ = false;
    absl::StatusOr<Value> v = EvalSlice(obj, slice, frame);
    const_mode_ = true;
    if (v.ok() || absl::StrContains(v.status().message(), "step cannot be zero")) return v;
    return Value::Undefined("slice of a constant failed");
  }
  // Slices bypass the sandboxed getitem in Jinja2: errors are errors.
  std::optional<int64_t> parts[3];
  bool valid = true;
  for (int i = 0; i < 3; ++i) {
    if (slice.args[i] == nullptr) continue;
    ORCA_ASSIGN_OR_RETURN(Value v, Eval(*slice.args[i], frame));
    if (v.is_integral()) {
      parts[i] = v.as_int();
    } else if (!v.is_none()) {
      valid = false;
    }
  }
  if (obj.is_undefined()) return UndefinedError(obj);
  if (obj.is_dict()) return TypeError("unhashable type: 'slice'");
  if (!(obj.is_string() || obj.is_indexable_seq())) {
    return TypeError(absl::StrCat("'", TypeName(obj), "' object is not subscriptable"));
  }
  if (!valid) {
    return TypeError("slice indices must be integers or None or have an __index__ method");
  }
  const int64_t step = parts[2].value_or(1);
  if (step == 0) return absl::InvalidArgumentError("slice step cannot be zero");
  if (obj.is_string()) {
    const std::vector<char32_t> cps = DecodeUtf8(obj.str());
    std::string out;
    for (size_t i : SliceIndices(static_cast<int64_t>(cps.size()), parts[0], parts[1], step)) {
      AppendUtf8(cps[i], &out);
    }
    return Value::String(std::move(out), obj.safe());
  }
  const auto& items = obj.seq().items;
  std::vector<Value> out;
  for (size_t i : SliceIndices(static_cast<int64_t>(items.size()), parts[0], parts[1], step)) {
    out.push_back(items[i]);
  }
  return Value::Seq(std::move(out), obj.seq().kind);
}

absl::StatusOr<Value> Interpreter::EvalCompare(const Expr& expr, const FramePtr& frame) {
  ORCA_ASSIGN_OR_RETURN(Value left, Eval(*expr.args[0], frame));
  for (size_t i = 0; i < expr.compare_ops.size(); ++i) {
    ORCA_ASSIGN_OR_RETURN(Value right, Eval(*expr.args[i + 1], frame));
    bool result = false;
    switch (expr.compare_ops[i]) {
      case CompareOp::kEq:
        result = Equals(left, right);
        break;
      case CompareOp::kNe:
        result = !Equals(left, right);
        break;
      case CompareOp::kLt: {
        ORCA_ASSIGN_OR_RETURN(result, Less(left, right));
        break;
      }
      case CompareOp::kGt: {
        ORCA_ASSIGN_OR_RETURN(result, Less(right, left));
        break;
      }
      case CompareOp::kLe: {
        ORCA_ASSIGN_OR_RETURN(bool less, Less(left, right));
        result = less || Equals(left, right);
        break;
      }
      case CompareOp::kGe: {
        ORCA_ASSIGN_OR_RETURN(bool greater, Less(right, left));
        result = greater || Equals(left, right);
        break;
      }
      case CompareOp::kIn:
      case CompareOp::kNotIn: {
        CallArgs args;
        args.positional.push_back(right);
        ORCA_ASSIGN_OR_RETURN(result, ApplyTest(*this, "in", left, std::move(args)));
        if (expr.compare_ops[i] == CompareOp::kNotIn) result = !result;
        break;
      }
    }
    if (!result) return Value::Bool(false);
    left = std::move(right);
  }
  return Value::Bool(true);
}

absl::StatusOr<Value> Interpreter::Binary(BinaryOp op, const Value& a, const Value& b) {
  if (a.is_undefined()) return UndefinedError(a);
  // `str % undefined` formats: Undefined has __getitem__, so it counts as a mapping.
  if (b.is_undefined() && !(op == BinaryOp::kMod && a.is_string())) return UndefinedError(b);
  static const char* const kSymbols[] = {"+", "-", "*", "/", "//", "%", "**"};
  const char* symbol = kSymbols[static_cast<int>(op)];
  if (a.is_number() && b.is_number()) {
    const bool floats = a.is_float() || b.is_float();
    const int64_t x = a.as_int();
    const int64_t y = b.as_int();
    const double fx = a.as_float();
    const double fy = b.as_float();
    int64_t r = 0;
    switch (op) {
      case BinaryOp::kAdd:
        if (floats) return Value::Float(fx + fy);
        if (__builtin_add_overflow(x, y, &r)) return Overflow();
        return Value::Int(r);
      case BinaryOp::kSub:
        if (floats) return Value::Float(fx - fy);
        if (__builtin_sub_overflow(x, y, &r)) return Overflow();
        return Value::Int(r);
      case BinaryOp::kMul:
        if (floats) return Value::Float(fx * fy);
        if (__builtin_mul_overflow(x, y, &r)) return Overflow();
        return Value::Int(r);
      case BinaryOp::kDiv:
        if (fy == 0) return absl::InvalidArgumentError("division by zero");
        return Value::Float(fx / fy);
      case BinaryOp::kFloorDiv:
      case BinaryOp::kMod: {
        if (floats) {
          if (fy == 0) return absl::InvalidArgumentError("float modulo or division by zero");
          double fd = 0;
          double m = 0;
          FloatDivmod(fx, fy, &fd, &m);
          return Value::Float(op == BinaryOp::kMod ? m : fd);
        }
        if (y == 0) return absl::InvalidArgumentError("integer division or modulo by zero");
        if (y == -1) {
          if (op == BinaryOp::kMod) return Value::Int(0);
          if (x == INT64_MIN) return Overflow();
          return Value::Int(-x);
        }
        int64_t q = x / y;
        int64_t m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) {
          m += y;
          --q;
        }
        return Value::Int(op == BinaryOp::kMod ? m : q);
      }
      case BinaryOp::kPow: {
        if (!floats && y >= 0) {
          int64_t result = 1;
          int64_t base = x;
          for (int64_t e = y; e > 0; e >>= 1) {
            if ((e & 1) && __builtin_mul_overflow(result, base, &result)) return Overflow();
            if (e > 1 && __builtin_mul_overflow(base, base, &base)) return Overflow();
          }
          return Value::Int(result);
        }
        if (fx == 0 && fy < 0) {
          return absl::InvalidArgumentError("0.0 cannot be raised to a negative power");
        }
        if (fx < 0 && fy != std::floor(fy)) {
          return absl::InvalidArgumentError("complex results are not supported");
        }
        return Value::Float(std::pow(fx, fy));
      }
    }
  }
  if (op == BinaryOp::kAdd) {
    if (a.is_string() && b.is_string()) {
      ORCA_RETURN_IF_ERROR(Allocate(a.str().size() + b.str().size()));
      if (a.safe() || b.safe()) {
        return Value::String(
            (a.safe() ? a.str() : HtmlEscape(a.str())) + (b.safe() ? b.str() : HtmlEscape(b.str())),
            true);
      }
      return Value::String(a.str() + b.str());
    }
    if (a.is_indexable_seq() && b.is_indexable_seq() && a.seq().kind == b.seq().kind) {
      ORCA_RETURN_IF_ERROR(Allocate(a.seq().items.size() + b.seq().items.size()));
      std::vector<Value> items = a.seq().items;
      items.insert(items.end(), b.seq().items.begin(), b.seq().items.end());
      return Value::Seq(std::move(items), a.seq().kind);
    }
    if (a.is_string() && !a.safe()) {
      return TypeError(absl::StrCat("can only concatenate str (not \"", TypeName(b), "\") to str"));
    }
    return OperandError(symbol, a, b);
  }
  if (op == BinaryOp::kMul && (a.is_integral() || b.is_integral())) {
    const Value& seq = a.is_integral() ? b : a;
    const int64_t count = std::max<int64_t>(0, (a.is_integral() ? a : b).as_int());
    if (seq.is_string()) {
      const size_t size = seq.str().size() * static_cast<size_t>(count);
      if (count > 0 && size / static_cast<size_t>(count) != seq.str().size()) return Overflow();
      ORCA_RETURN_IF_ERROR(Allocate(size));
      std::string out;
      for (int64_t i = 0; i < count; ++i) out += seq.str();
      return Value::String(std::move(out), seq.safe());
    }
    if (seq.is_indexable_seq()) {
      const size_t size = seq.seq().items.size() * static_cast<size_t>(count);
      ORCA_RETURN_IF_ERROR(Allocate(size));
      std::vector<Value> out;
      for (int64_t i = 0; i < count; ++i) {
        out.insert(out.end(), seq.seq().items.begin(), seq.seq().items.end());
      }
      return Value::Seq(std::move(out), seq.seq().kind);
    }
  }
  if (op == BinaryOp::kMod && a.is_string()) {
    ORCA_ASSIGN_OR_RETURN(std::string s, PercentFormat(*this, a.str(), b));
    return Value::String(std::move(s));
  }
  return OperandError(symbol, a, b);
}

absl::StatusOr<Value> Interpreter::EvalNode(const Expr& expr, const FramePtr& frame) {
  switch (expr.kind) {
    case ExprKind::kConst:
      return expr.constant;
    case ExprKind::kName: {
      if (const_mode_) return absl::FailedPreconditionError("not a constant");
      const Value* v = frame->Lookup(expr.name);
      if (v != nullptr) return *v;
      return Value::Undefined(absl::StrCat("'", expr.name, "' is undefined"));
    }
    case ExprKind::kNsRef:
      return absl::InvalidArgumentError("namespace reference outside of an assignment");
    case ExprKind::kList:
    case ExprKind::kTuple: {
      std::vector<Value> items;
      for (const ExprPtr& e : expr.args) {
        ORCA_ASSIGN_OR_RETURN(Value v, Eval(*e, frame));
        items.push_back(std::move(v));
      }
      return Value::Seq(std::move(items),
                        expr.kind == ExprKind::kList ? SeqKind::kList : SeqKind::kTuple);
    }
    case ExprKind::kDict: {
      std::vector<std::pair<Value, Value>> items;
      for (size_t i = 0; i + 1 < expr.args.size(); i += 2) {
        ORCA_ASSIGN_OR_RETURN(Value key, Eval(*expr.args[i], frame));
        ORCA_ASSIGN_OR_RETURN(Value value, Eval(*expr.args[i + 1], frame));
        ORCA_RETURN_IF_ERROR(CheckHashable(key));
        bool replaced = false;
        for (auto& [k, v] : items) {
          if (Equals(k, key)) {
            v = value;
            replaced = true;
            break;
          }
        }
        if (!replaced) items.emplace_back(std::move(key), std::move(value));
      }
      return Value::Dict(std::move(items));
    }
    case ExprKind::kGetAttr: {
      ORCA_ASSIGN_OR_RETURN(Value obj, Eval(*expr.args[0], frame));
      return GetAttr(obj, expr.name);
    }
    case ExprKind::kGetItem: {
      ORCA_ASSIGN_OR_RETURN(Value obj, Eval(*expr.args[0], frame));
      if (expr.args[1]->kind == ExprKind::kSlice) return EvalSlice(obj, *expr.args[1], frame);
      ORCA_ASSIGN_OR_RETURN(Value key, Eval(*expr.args[1], frame));
      return GetItem(obj, key);
    }
    case ExprKind::kSlice:
      return absl::InvalidArgumentError("slice outside of a subscript");
    case ExprKind::kCall:
      if (const_mode_) return absl::FailedPreconditionError("not a constant");
      return EvalCall(expr, frame, nullptr);
    case ExprKind::kFilter:
      return EvalFilter(expr, frame, nullptr);
    case ExprKind::kTest: {
      ORCA_ASSIGN_OR_RETURN(Value subject, Eval(*expr.args[0], frame));
      ORCA_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(expr, 1, frame));
      ORCA_ASSIGN_OR_RETURN(bool result, ApplyTest(*this, expr.name, subject, std::move(args)));
      return Value::Bool(result);
    }
    case ExprKind::kNeg:
    case ExprKind::kPos: {
      ORCA_ASSIGN_OR_RETURN(Value v, Eval(*expr.args[0], frame));
      if (v.is_undefined()) return UndefinedError(v);
      if (!v.is_number()) {
        return TypeError(absl::StrCat("bad operand type for unary ",
                                      expr.kind == ExprKind::kNeg ? "-" : "+", ": '", TypeName(v),
                                      "'"));
      }
      if (expr.kind == ExprKind::kPos) return v.is_float() ? v : Value::Int(v.as_int());
      if (v.is_float()) return Value::Float(-v.as_float());
      if (v.as_int() == INT64_MIN) return Overflow();
      return Value::Int(-v.as_int());
    }
    case ExprKind::kNot: {
      ORCA_ASSIGN_OR_RETURN(Value v, Eval(*expr.args[0], frame));
      return Value::Bool(!Truthy(v));
    }
    case ExprKind::kBinary: {
      ORCA_ASSIGN_OR_RETURN(Value a, Eval(*expr.args[0], frame));
      ORCA_ASSIGN_OR_RETURN(Value b, Eval(*expr.args[1], frame));
      return Binary(expr.op, a, b);
    }
    case ExprKind::kAnd:
    case ExprKind::kOr: {
      ORCA_ASSIGN_OR_RETURN(Value a, Eval(*expr.args[0], frame));
      if (Truthy(a) == (expr.kind == ExprKind::kOr)) return a;
      return Eval(*expr.args[1], frame);
    }
    case ExprKind::kConcat: {
      std::string out;
      for (const ExprPtr& e : expr.args) {
        ORCA_ASSIGN_OR_RETURN(Value v, Eval(*e, frame));
        out += ToStr(v);
        ORCA_RETURN_IF_ERROR(CheckSize(out.size()));
      }
      ORCA_RETURN_IF_ERROR(Allocate(out.size()));
      return Value::String(std::move(out));
    }
    case ExprKind::kCompare:
      return EvalCompare(expr, frame);
    case ExprKind::kCondExpr: {
      ORCA_ASSIGN_OR_RETURN(Value cond, Eval(*expr.args[0], frame));
      if (Truthy(cond)) return Eval(*expr.args[1], frame);
      if (expr.args[2] != nullptr) return Eval(*expr.args[2], frame);
      return Value::Undefined(
          "the inline if-expression evaluated to false and no else section was defined");
    }
  }
  return absl::InternalError("unknown expression");
}

}  // namespace orca::chat_internal
