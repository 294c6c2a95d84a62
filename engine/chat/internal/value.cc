#include "engine/chat/internal/value.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/chat/internal/py_string.h"
#include "engine/common/status_macros.h"

namespace orca::chat_internal {
namespace {

const std::string& EmptyString() {
  static const std::string* empty = new std::string();
  return *empty;
}

absl::Status TooDeep() {
  return absl::InvalidArgumentError(
      absl::StrCat("value nested deeper than ", kMaxValueDepth, " levels"));
}

int ChildDepth(const Value& v) { return v.depth(); }

}  // namespace

const Value* DictData::Find(const Value& key) const {
  for (const auto& [k, v] : items) {
    if (Equals(k, key)) return &v;
  }
  return nullptr;
}

const Value* DictData::FindString(const std::string& key) const {
  for (const auto& [k, v] : items) {
    if (k.is_string() && k.str() == key) return &v;
  }
  return nullptr;
}

Value Value::Undefined(std::string message) {
  Value v;
  v.ptr_ = std::make_shared<std::string>(std::move(message));
  return v;
}

Value Value::None() {
  Value v;
  v.type_ = Type::kNone;
  return v;
}

Value Value::Bool(bool b) {
  Value v;
  v.type_ = Type::kBool;
  v.bool_ = b;
  return v;
}

Value Value::Int(int64_t i) {
  Value v;
  v.type_ = Type::kInt;
  v.int_ = i;
  return v;
}

Value Value::Float(double f) {
  Value v;
  v.type_ = Type::kFloat;
  v.float_ = f;
  return v;
}

Value Value::String(std::string s, bool safe) {
  Value v;
  v.type_ = Type::kString;
  v.safe_ = safe;
  v.ptr_ = std::make_shared<std::string>(std::move(s));
  return v;
}

absl::StatusOr<Value> Value::Seq(std::vector<Value> items, SeqKind kind) {
  auto data = std::make_shared<SeqData>();
  int depth = 0;
  for (const Value& item : items) depth = std::max(depth, ChildDepth(item));
  if (depth + 1 > kMaxValueDepth) return TooDeep();
  data->items = std::move(items);
  data->kind = kind;
  data->depth = depth + 1;
  Value v;
  v.type_ = Type::kSeq;
  v.ptr_ = std::move(data);
  return v;
}

absl::StatusOr<Value> Value::Dict(std::vector<std::pair<Value, Value>> items) {
  auto data = std::make_shared<DictData>();
  int depth = 0;
  for (const auto& [k, val] : items) depth = std::max({depth, ChildDepth(k), ChildDepth(val)});
  if (depth + 1 > kMaxValueDepth) return TooDeep();
  data->items = std::move(items);
  data->depth = depth + 1;
  Value v;
  v.type_ = Type::kDict;
  v.ptr_ = std::move(data);
  return v;
}

Value Value::Obj(std::shared_ptr<Object> object) {
  Value v;
  v.type_ = Type::kObject;
  v.ptr_ = std::move(object);
  return v;
}

const std::string& Value::str() const {
  if ((type_ == Type::kString || type_ == Type::kUndefined) && ptr_ != nullptr) {
    return *static_cast<const std::string*>(ptr_.get());
  }
  return EmptyString();
}

int Value::depth() const {
  if (is_seq()) return seq().depth;
  if (is_dict()) return dict().depth;
  return 0;
}

Value Object::GetAttr(const std::string& name) const {
  return Value::Undefined(absl::StrCat("'", Repr(), "' has no attribute '", name, "'"));
}

absl::StatusOr<Value> Object::Call(Interpreter&, CallArgs) const {
  return absl::InvalidArgumentError(absl::StrCat("'", Repr(), "' object is not callable"));
}

std::string Namespace::Repr() const {
  std::string out = "<Namespace {";
  for (size_t i = 0; i < attrs_.size(); ++i) {
    if (i > 0) out += ", ";
    out += PyReprString(attrs_[i].first) + ": " + chat_internal::Repr(attrs_[i].second);
  }
  return out + "}>";
}

Value Namespace::GetAttr(const std::string& name) const {
  for (const auto& [k, v] : attrs_) {
    if (k == name) return v;
  }
  return Value::Undefined(absl::StrCat("'Namespace' object has no attribute '", name, "'"));
}

void Namespace::SetAttr(const std::string& name, Value value) {
  for (auto& [k, v] : attrs_) {
    if (k == name) {
      v = std::move(value);
      return;
    }
  }
  attrs_.emplace_back(name, std::move(value));
}

bool Truthy(const Value& v) {
  switch (v.type()) {
    case Value::Type::kUndefined:
    case Value::Type::kNone:
      return false;
    case Value::Type::kBool:
      return v.as_bool();
    case Value::Type::kInt:
      return v.as_int() != 0;
    case Value::Type::kFloat:
      return v.as_float() != 0.0;
    case Value::Type::kString:
      return !v.str().empty();
    case Value::Type::kSeq:
      return v.seq().kind == SeqKind::kIterator || !v.seq().items.empty();
    case Value::Type::kDict:
      return !v.dict().items.empty();
    case Value::Type::kObject:
      return true;
  }
  return false;
}

bool Equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_float() == b.as_float();
    return a.as_int() == b.as_int();
  }
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case Value::Type::kUndefined:
    case Value::Type::kNone:
      return true;
    case Value::Type::kString:
      return a.str() == b.str();
    case Value::Type::kSeq: {
      const SeqData& x = a.seq();
      const SeqData& y = b.seq();
      if (x.kind != y.kind) return false;
      if (x.kind == SeqKind::kIterator || x.kind == SeqKind::kDictValues) {
        return a.identity() == b.identity();
      }
      if (x.items.size() != y.items.size()) return false;
      for (size_t i = 0; i < x.items.size(); ++i) {
        if (!Equals(x.items[i], y.items[i])) return false;
      }
      return true;
    }
    case Value::Type::kDict: {
      const DictData& x = a.dict();
      const DictData& y = b.dict();
      if (x.items.size() != y.items.size()) return false;
      for (const auto& [k, v] : x.items) {
        const Value* other = y.Find(k);
        if (other == nullptr || !Equals(v, *other)) return false;
      }
      return true;
    }
    case Value::Type::kObject:
      return a.identity() == b.identity();
    default:
      return false;
  }
}

absl::StatusOr<bool> Less(const Value& a, const Value& b) {
  if (a.is_undefined()) return UndefinedError(a);
  if (b.is_undefined()) return UndefinedError(b);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_float() < b.as_float();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.str() < b.str();
  if (a.is_indexable_seq() && b.is_indexable_seq() && a.seq().kind == b.seq().kind) {
    const auto& x = a.seq().items;
    const auto& y = b.seq().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!Equals(x[i], y[i])) return Less(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  return absl::InvalidArgumentError(absl::StrCat("'<' not supported between instances of '",
                                                 TypeName(a), "' and '", TypeName(b), "'"));
}

std::string TypeName(const Value& v) {
  switch (v.type()) {
    case Value::Type::kUndefined:
      return "Undefined";
    case Value::Type::kNone:
      return "NoneType";
    case Value::Type::kBool:
      return "bool";
    case Value::Type::kInt:
      return "int";
    case Value::Type::kFloat:
      return "float";
    case Value::Type::kString:
      return "str";
    case Value::Type::kSeq:
      switch (v.seq().kind) {
        case SeqKind::kList:
          return "list";
        case SeqKind::kTuple:
          return "tuple";
        case SeqKind::kIterator:
          return "generator";
        case SeqKind::kDictKeys:
          return "dict_keys";
        case SeqKind::kDictValues:
          return "dict_values";
        case SeqKind::kDictItems:
          return "dict_items";
      }
      return "list";
    case Value::Type::kDict:
      return "dict";
    case Value::Type::kObject:
      return v.object()->is_namespace() ? "Namespace" : "object";
  }
  return "object";
}

absl::Status UndefinedError(const Value& v) {
  const std::string& message = v.str();
  return absl::InvalidArgumentError(message.empty() ? "undefined value" : message);
}

std::string ToStr(const Value& v) {
  switch (v.type()) {
    case Value::Type::kUndefined:
      return "";
    case Value::Type::kString:
      return v.str();
    default:
      return Repr(v);
  }
}

std::string Repr(const Value& v) {
  switch (v.type()) {
    case Value::Type::kUndefined:
      return "Undefined";
    case Value::Type::kNone:
      return "None";
    case Value::Type::kBool:
      return v.as_bool() ? "True" : "False";
    case Value::Type::kInt:
      return std::to_string(v.as_int());
    case Value::Type::kFloat:
      return PyFloatRepr(v.as_float());
    case Value::Type::kString:
      return v.safe() ? absl::StrCat("Markup(", PyReprString(v.str()), ")") : PyReprString(v.str());
    case Value::Type::kSeq: {
      const SeqData& s = v.seq();
      if (s.kind == SeqKind::kIterator) return "<generator object>";
      std::string inner;
      for (size_t i = 0; i < s.items.size(); ++i) {
        if (i > 0) inner += ", ";
        inner += Repr(s.items[i]);
      }
      switch (s.kind) {
        case SeqKind::kTuple:
          return "(" + inner + (s.items.size() == 1 ? ",)" : ")");
        case SeqKind::kDictKeys:
          return "dict_keys([" + inner + "])";
        case SeqKind::kDictValues:
          return "dict_values([" + inner + "])";
        case SeqKind::kDictItems:
          return "dict_items([" + inner + "])";
        default:
          return "[" + inner + "]";
      }
    }
    case Value::Type::kDict: {
      std::string out = "{";
      const auto& items = v.dict().items;
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += ", ";
        out += Repr(items[i].first) + ": " + Repr(items[i].second);
      }
      return out + "}";
    }
    case Value::Type::kObject:
      return v.object()->Repr();
  }
  return "";
}

namespace {

absl::StatusOr<Value> FromJsonAt(const nlohmann::ordered_json& json, int depth) {
  if (depth > kMaxValueDepth) return TooDeep();
  switch (json.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::None();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::Bool(json.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value::Int(json.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const uint64_t u = json.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value::Float(static_cast<double>(u));
      return Value::Int(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value::Float(json.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value::String(json.get_ref<const std::string&>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      items.reserve(json.size());
      for (const auto& item : json) {
        ORCA_ASSIGN_OR_RETURN(Value v, FromJsonAt(item, depth + 1));
        items.push_back(std::move(v));
      }
      return Value::Seq(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      std::vector<std::pair<Value, Value>> items;
      items.reserve(json.size());
      for (auto it = json.begin(); it != json.end(); ++it) {
        ORCA_ASSIGN_OR_RETURN(Value v, FromJsonAt(it.value(), depth + 1));
        items.emplace_back(Value::String(it.key()), std::move(v));
      }
      return Value::Dict(std::move(items));
    }
    default:
      return absl::InvalidArgumentError("unsupported JSON value in the template context");
  }
}

}  // namespace

absl::StatusOr<Value> FromJson(const nlohmann::ordered_json& json) { return FromJsonAt(json, 0); }

}  // namespace orca::chat_internal
