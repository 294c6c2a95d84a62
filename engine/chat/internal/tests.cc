// Jinja2's tests (`x is defined`, `x is divisibleby 3`, ...), jinja2.tests.
#include <cmath>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/chat/internal/builtins.h"
#include "engine/chat/internal/filters_internal.h"
#include "engine/chat/internal/interpreter.h"
#include "engine/chat/internal/py_string.h"
#include "engine/common/status_macros.h"

namespace orca::chat_internal {
namespace {

const std::set<std::string>& TestNames() {
  static const auto* names = new std::set<std::string>{
      "!=",       "<",        "<=",          "==",       ">",           ">=",       "boolean",
      "callable", "defined",  "divisibleby", "eq",       "equalto",     "escaped",  "even",
      "false",    "filter",   "float",       "ge",       "greaterthan", "gt",       "in",
      "integer",  "iterable", "le",          "lessthan", "lower",       "lt",       "mapping",
      "ne",       "none",     "number",      "odd",      "sameas",      "sequence", "string",
      "test",     "true",     "undefined",   "upper"};
  return *names;
}

// Python's `v % divisor == expected` for numbers.
absl::StatusOr<bool> ModuloIs(const Value& v, const Value& divisor, int64_t expected) {
  if (v.is_undefined()) return UndefinedError(v);
  if (!v.is_number() || !divisor.is_number()) {
    return absl::InvalidArgumentError(absl::StrCat("unsupported operand type(s) for %: '",
                                                   TypeName(v), "' and '", TypeName(divisor), "'"));
  }
  if (divisor.as_float() == 0)
    return absl::InvalidArgumentError("integer division or modulo by zero");
  if (v.is_float() || divisor.is_float()) {
    const double d = divisor.as_float();
    double m = std::fmod(v.as_float(), d);
    if (m != 0 && ((m < 0) != (d < 0))) m += d;
    return m == static_cast<double>(expected);
  }
  const int64_t d = divisor.as_int();
  if (d == -1) return expected == 0;
  int64_t m = v.as_int() % d;
  if (m != 0 && ((m < 0) != (d < 0))) m += d;
  return m == expected;
}

bool Identical(const Value& a, const Value& b) {
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case Value::Type::kUndefined:
    case Value::Type::kNone:
      return true;
    case Value::Type::kBool:
    case Value::Type::kInt:
    case Value::Type::kFloat:
      return Equals(a, b);
    case Value::Type::kString:
      return a.identity() == b.identity() || a.str() == b.str();
    default:
      return a.identity() == b.identity();
  }
}

}  // namespace

bool IsKnownTest(const std::string& name) { return TestNames().count(name) > 0; }

absl::StatusOr<bool> ApplyTest(Interpreter& interp, const std::string& name, const Value& v,
                               CallArgs args) {
  ORCA_RETURN_IF_ERROR(interp.Step());
  if (!IsKnownTest(name)) {
    return absl::InvalidArgumentError(absl::StrCat("no test named '", name, "'"));
  }
  const bool binary = name == "==" || name == "!=" || name == "<" || name == "<=" || name == ">" ||
                      name == ">=" || name == "eq" || name == "equalto" || name == "ne" ||
                      name == "lt" || name == "le" || name == "gt" || name == "ge" ||
                      name == "greaterthan" || name == "lessthan" || name == "sameas" ||
                      name == "in" || name == "divisibleby";
  ORCA_ASSIGN_OR_RETURN(
      std::vector<std::optional<Value>> a,
      BindArgs(name, std::move(args),
               binary ? std::vector<std::string>{"other"} : std::vector<std::string>{},
               binary ? 1 : 0));
  if (binary) {
    const Value& other = *a[0];
    if (name == "==" || name == "eq" || name == "equalto") return Equals(v, other);
    if (name == "!=" || name == "ne") return !Equals(v, other);
    if (name == "<" || name == "lt" || name == "lessthan") return Less(v, other);
    if (name == ">" || name == "gt" || name == "greaterthan") return Less(other, v);
    if (name == "<=" || name == "le") {
      ORCA_ASSIGN_OR_RETURN(bool less, Less(v, other));
      return less || Equals(v, other);
    }
    if (name == ">=" || name == "ge") {
      ORCA_ASSIGN_OR_RETURN(bool greater, Less(other, v));
      return greater || Equals(v, other);
    }
    if (name == "sameas") return Identical(v, other);
    if (name == "in") return Contains(interp, other, v);
    return ModuloIs(v, other, 0);
  }
  if (name == "filter") return v.is_string() && IsKnownFilter(v.str());
  if (name == "test") return v.is_string() && IsKnownTest(v.str());
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "number") return v.is_number();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_dict();
  // Jinja's Undefined defines __call__ (to raise), so it counts as callable.
  if (name == "callable") return v.is_undefined() || (v.is_object() && v.object()->callable());
  if (name == "escaped") return v.is_string() && v.safe();
  if (name == "iterable") {
    return v.is_undefined() || v.is_string() || v.is_seq() || v.is_dict();
  }
  if (name == "sequence") {
    return v.is_undefined() || v.is_string() || v.is_indexable_seq() || v.is_dict();
  }
  if (name == "lower" || name == "upper") {
    CallArgs none;
    ORCA_ASSIGN_OR_RETURN(Value r, CallMethod(interp, Value::String(ToStr(v)),
                                              name == "lower" ? "islower" : "isupper", none));
    return Truthy(r);
  }
  return ModuloIs(v, Value::Int(2), name == "odd" ? 1 : 0);  // odd / even
}

}  // namespace orca::chat_internal
