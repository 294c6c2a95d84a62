// The values a chat template computes with: Python's JSON-like types as Jinja2 sees them
// (None, bool, int, float, str, list, tuple, dict), Jinja's Undefined, and objects
// (namespaces, macros, bound methods, the loop variable).
//
// A Value is a small handle: containers and strings are shared, immutable after
// construction (Jinja's immutable sandbox forbids mutating lists and dicts), so copies
// are cheap. Only Namespace objects are mutable. Values belong to one render and are not
// shared between threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace orca::chat_internal {

class Interpreter;
class Object;
class Value;

// How a sequence behaves in Python: a list, a tuple, a one-shot iterator (generators and
// reversed() results: no len(), always true, not subscriptable) or a dict view.
enum class SeqKind : uint8_t { kList, kTuple, kIterator, kDictKeys, kDictValues, kDictItems };

struct SeqData {
  std::vector<Value> items;
  SeqKind kind = SeqKind::kList;
  int depth = 1;
};

struct DictData {
  std::vector<std::pair<Value, Value>> items;  // insertion order, keys unique under ==
  int depth = 1;
  // Returns the value for `key`, or nullptr.
  const Value* Find(const Value& key) const;
  const Value* FindString(const std::string& key) const;
};

// Containers nested deeper than this are rejected (recursion in repr, ==, tojson).
inline constexpr int kMaxValueDepth = 200;

class Value {
 public:
  enum class Type : uint8_t {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kSeq,
    kDict,
    kObject
  };

  Value() = default;  // undefined
  static Value Undefined(std::string message);
  static Value None();
  static Value Bool(bool b);
  static Value Int(int64_t i);
  static Value Float(double f);
  static Value String(std::string s, bool safe = false);
  // Fails when the result would nest deeper than kMaxValueDepth.
  static absl::StatusOr<Value> Seq(std::vector<Value> items, SeqKind kind = SeqKind::kList);
  static absl::StatusOr<Value> Dict(std::vector<std::pair<Value, Value>> items);
  static Value Obj(std::shared_ptr<Object> object);

  Type type() const { return type_; }
  bool is_undefined() const { return type_ == Type::kUndefined; }
  bool is_none() const { return type_ == Type::kNone; }
  bool is_bool() const { return type_ == Type::kBool; }
  bool is_int() const { return type_ == Type::kInt; }
  bool is_float() const { return type_ == Type::kFloat; }
  // Python numbers: bool is an int subclass.
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_integral() const { return is_int() || is_bool(); }
  bool is_string() const { return type_ == Type::kString; }
  bool is_seq() const { return type_ == Type::kSeq; }
  bool is_dict() const { return type_ == Type::kDict; }
  bool is_object() const { return type_ == Type::kObject; }
  // A list or a tuple: indexable and sliceable.
  bool is_indexable_seq() const {
    return is_seq() && (seq().kind == SeqKind::kList || seq().kind == SeqKind::kTuple);
  }

  bool as_bool() const { return bool_; }
  // The integer value of an int or a bool.
  int64_t as_int() const { return is_bool() ? (bool_ ? 1 : 0) : int_; }
  // The float value of any number.
  double as_float() const { return is_float() ? float_ : static_cast<double>(as_int()); }
  const std::string& str() const;      // string payload; the message for undefined
  bool safe() const { return safe_; }  // a markupsafe.Markup string
  const SeqData& seq() const { return *static_cast<const SeqData*>(ptr_.get()); }
  const DictData& dict() const { return *static_cast<const DictData*>(ptr_.get()); }
  Object* object() const { return static_cast<Object*>(ptr_.get()); }
  std::shared_ptr<Object> shared_object() const { return std::static_pointer_cast<Object>(ptr_); }
  // Identity for Python's `is` on containers and objects.
  const void* identity() const { return ptr_.get(); }
  int depth() const;

 private:
  Type type_ = Type::kUndefined;
  bool safe_ = false;
  union {
    bool bool_;
    int64_t int_ = 0;
    double float_;
  };
  std::shared_ptr<void> ptr_;  // std::string, SeqData, DictData or Object
};

// Arguments of a call, as Python passes them.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

// Namespaces, macros, bound methods and loop variables.
class Object {
 public:
  virtual ~Object() = default;
  // Returns Python's repr() of the object.
  virtual std::string Repr() const = 0;
  // Returns the attribute `name`, or an undefined value.
  virtual Value GetAttr(const std::string& name) const;
  virtual bool callable() const { return false; }
  // Calls the object; fails for objects that are not callable.
  virtual absl::StatusOr<Value> Call(Interpreter& interpreter, CallArgs args) const;
  virtual bool is_namespace() const { return false; }
};

// jinja2.utils.Namespace: the one mutable object, target of `{% set ns.attr = ... %}`.
class Namespace : public Object {
 public:
  std::string Repr() const override;
  Value GetAttr(const std::string& name) const override;
  bool is_namespace() const override { return true; }
  void SetAttr(const std::string& name, Value value);
  // Drops every attribute (breaks reference cycles at the end of a render).
  void Clear() { attrs_.clear(); }

 private:
  std::vector<std::pair<std::string, Value>> attrs_;
};

// Python truthiness.
bool Truthy(const Value& v);
// Python `a == b` (Undefined equals only Undefined).
bool Equals(const Value& a, const Value& b);
// Python `a < b`; fails with a TypeError message for unorderable operands.
absl::StatusOr<bool> Less(const Value& a, const Value& b);
// Python str(v): how `{{ v }}` prints it.
std::string ToStr(const Value& v);
// Python repr(v).
std::string Repr(const Value& v);
// Python's type name, for error messages ("int", "str", "list", ...).
std::string TypeName(const Value& v);
// The error a use of an undefined value raises.
absl::Status UndefinedError(const Value& v);

// Converts JSON (the render context) to values; fails past kMaxValueDepth. Dicts keep
// the objects' key order (a nlohmann::json converted to ordered_json has its keys sorted).
absl::StatusOr<Value> FromJson(const nlohmann::ordered_json& json);

// Python json.dumps(v, ensure_ascii, indent, separators, sort_keys).
struct JsonDumpOptions {
  bool ensure_ascii = false;
  bool has_indent = false;  // indent=None when false
  std::string indent;       // the indent unit (spaces or the given string)
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
};
// Returns the JSON text; fails (TypeError) for values JSON cannot hold.
absl::StatusOr<std::string> JsonDumps(const Value& v, const JsonDumpOptions& options);

}  // namespace orca::chat_internal
