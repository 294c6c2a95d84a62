// Filters on sequences and mappings (jinja2.filters). Filters that return generators in
// Jinja2 (map, select, unique, reverse, ...) return SeqKind::kIterator values, which
// behave like generators: no len(), always true, printable only as "<generator object>".
#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/chat/internal/builtins.h"
#include "engine/chat/internal/filters_internal.h"
#include "engine/chat/internal/interpreter.h"
#include "engine/chat/internal/py_string.h"
#include "engine/common/status_macros.h"

namespace orca::chat_internal {
namespace {

using Args = std::vector<std::optional<Value>>;

absl::Status TypeError(const std::string& message) { return absl::InvalidArgumentError(message); }

bool CaseSensitive(const std::optional<Value>& v) { return v && Truthy(*v); }

absl::StatusOr<Value> First(Interpreter& interp, const Value& v, CallArgs args) {
  ORCA_RETURN_IF_ERROR(BindArgs("first", std::move(args), {}, 0).status());
  ORCA_ASSIGN_OR_RETURN(std::vector<Value> items, interp.Iterate(v));
  if (items.empty()) return Value::Undefined("No first item, sequence was empty.");
  return items.front();
}

absl::StatusOr<Value> Last(Interpreter& interp, const Value& v, CallArgs args) {
  ORCA_RETURN_IF_ERROR(BindArgs("last", std::move(args), {}, 0).status());
  if (v.is_seq() && v.seq().kind == SeqKind::kIterator) {
    return TypeError("'generator' object is not reversible");
  }
  ORCA_ASSIGN_OR_RETURN(std::vector<Value> items, interp.Iterate(v));
  if (items.empty()) return Value::Undefined("No last item, sequence was empty.");
  return items.back();
}

absl::StatusOr<Value> Join(Interpreter& interp, const Value& v, CallArgs args) {
  ORCA_ASSIGN_OR_RETURN(Args a, BindArgs("join", std::move(args), {"d", "attribute"}, 0));
  const std::string sep = a[0] ? ToStr(*a[0]) : "";
  ORCA_ASSIGN_OR_RETURN(std::vector<Value> items, interp.Iterate(v));
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    Value item = items[i];
    if (a[1] && !a[1]->is_none()) {
      ORCA_ASSIGN_OR_RETURN(item, GetAttribute(interp, item, a[1], false, std::nullopt));
    }
    if (i > 0) out += sep;
    out += ToStr(item);
    ORCA_RETURN_IF_ERROR(interp.CheckSize(out.size()));
  }
  ORCA_RETURN_IF_ERROR(interp.Allocate(out.size()));
  return Value::String(std::move(out));
}

absl::StatusOr<Value> List(Interpreter& interp, const Value& v, CallArgs args) {
  ORCA_RETURN_IF_ERROR(BindArgs("list", std::move(args), {}, 0).status());
  ORCA_ASSIGN_OR_RETURN(std::vector<Value> items, interp.Iterate(v));
  return Value::Seq(std::move(items));
}

absl::StatusOr<Value> Reverse(Interpreter& interp, const Value& v, CallArgs args) {
  ORCA_RETURN_IF_ERROR(BindArgs("reverse", std::move(args), {}, 0).status());
  if (v.is_string()) {
    std::vector<char32_t> cps = DecodeUtf8(v.str());
    std::reverse(cps.begin(), cps.end());
    return Value::String(EncodeUtf8(cps, 0, cps.size()));
  }
  absl::StatusOr<std::vector<Value>> items = interp.Iterate(v);
  if (!items.ok()) return TypeError("argument must be iterable");
  std::reverse(items->begin(), items->end());
  const bool reversible = !(v.is_seq() && v.seq().kind == SeqKind::kIterator);
  return Value::Seq(std::move(*items), reversible ? SeqKind::kIterator : SeqKind::kList);
}

// Python's sorted(items, key=keys) with stable order; fails on unorderable keys.
absl::StatusOr<std::vector<Value>> SortByKeys(std::vector<Value> items, std::vector<Value> keys,
                                              bool reverse) {
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  absl::Status error;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    if (!error.ok()) return false;
    absl::StatusOr<bool> less = reverse ? Less(keys[y], keys[x]) : Less(keys[x], keys[y]);
    if (!less.ok()) {
      error = less.status();
      return false;
    }
    return *less;
  });
  ORCA_RETURN_IF_ERROR(error);
  std::vector<Value> sorted;
  sorted.reserve(items.size());
  for (size_t i : order) sorted.push_back(std::move(items[i]));
  return sorted;
}

absl::StatusOr<Value> Sort(Interpreter& interp, const Value& v, CallArgs args) {
  ORCA_ASSIGN_OR_RETURN(
      Args a, BindArgs("sort", std::move(args), {"reverse", "case_sensitive", "attribute"}, 0));
  ORCA_ASSIGN_OR_RETURN(std::vector<Value> items, interp.Iterate(v));
  std::vector<std::optional<Value>> attributes;
  if (a[2] && a[2]->is_string()) {
    for (std::string& part : PySplit(a[2]->str(), std::string(","), -1, false)) {
      attributes.emplace_back(Value::String(std::move(part)));
    }
  } else {
    attributes.push_back(a[2]);
  }
  std::vector<Value> keys;
  for (const Value& item : items) {
    std::vector<Value> key;
    for (const auto& attribute : attributes) {
      ORCA_ASSIGN_OR_RETURN(
          Value k, GetAttribute(interp, item, attribute, !CaseSensitive(a[1]), std::nullopt));
      key.push_back(std::move(k));
    }
    ORCA_ASSIGN_OR_RETURN(Value key_value, Value::Seq(std::move(key)));
    keys.push_back(std::move(key_value));
  }
  ORCA_ASSIGN_OR_RETURN(std::vector<Value> sorted,
                        SortByKeys(std::move(items), std::move(keys), a[0] && Truthy(*a[0])));
  return Value::Seq(std::move(sorted));
}

absl::StatusOr<Value> Unique(Interpreter& interp, const Value& v, CallArgs args) {
  ORCA_ASSIGN_OR_RETURN(Args a,
                        BindArgs("unique", std::move(args), {"case_sensitive", "attribute"}, 0));
  ORCA_ASSIGN_OR_RETURN(std::vector<Value> items, interp.Iterate(v));
  std::vector<Value> seen;
  std::vector<Value> out;
  for (const Value& item : items) {
    ORCA_ASSIGN_OR_RETURN(Value key,
                          GetAttribute(interp, item, a[1], !CaseSensitive(a[0]), std::nullopt));
    ORCA_RETURN_IF_ERROR(CheckHashable(key));
    bool found = false;
    for (const Value& s : seen) found = found || Equals(s, key);
    if (found) continue;
    seen.push_back(key);
    out.push_back(item);
  }
  return Generator(std::move(out));
}

absl::StatusOr<Value> Map(Interpreter& interp, const Value& v, CallArgs args) {
  if (!Truthy(v)) return Generator({});
  ORCA_ASSIGN_OR_RETURN(std::vector<Value> items, interp.Iterate(v));
  std::vector<Value> out;
  const bool by_attribute = args.positional.empty() &&
                            std::any_of(args.keyword.begin(), args.keyword.end(),
                                        [](const auto& kw) { return kw.first == "attribute"; });
  if (by_attribute) {
    ORCA_ASSIGN_OR_RETURN(Args a, BindArgs("map", std::move(args), {"attribute", "default"}, 1));
    for (const Value& item : items) {
      ORCA_ASSIGN_OR_RETURN(Value mapped, GetAttribute(interp, item, a[0], false, a[1]));
      out.push_back(std::move(mapped));
    }
    return Generator(std::move(out));
  }
  if (args.positional.empty()) return TypeError("map requires a filter argument");
  const std::string filter = ToStr(args.positional.front());
  args.positional.erase(args.positional.begin());
  for (const Value& item : items) {
    ORCA_ASSIGN_OR_RETURN(Value mapped, ApplyFilter(interp, filter, item, args));
    out.push_back(std::move(mapped));
  }
  return Generator(std::move(out));
}

absl::StatusOr<Value> SelectOrReject(Interpreter& interp, const Value& v, CallArgs args,
                                     bool select, bool lookup_attr) {
  if (!Truthy(v)) return Generator({});
  ORCA_ASSIGN_OR_RETURN(std::vector<Value> items, interp.Iterate(v));
  std::optional<Value> attribute;
  size_t off = 0;
  if (lookup_attr) {
    if (args.positional.empty()) return TypeError("Missing parameter for attribute name");
    attribute = args.positional[0];
    off = 1;
  }
  std::optional<std::string> test;
  if (args.positional.size() > off) test = ToStr(args.positional[off]);
  CallArgs test_args;
  for (size_t i = off + 1; i < args.positional.size(); ++i) {
    test_args.positional.push_back(args.positional[i]);
  }
  test_args.keyword = args.keyword;
  std::vector<Value> out;
  for (const Value& item : items) {
    ORCA_ASSIGN_OR_RETURN(Value subject,
                          GetAttribute(interp, item, attribute, false, std::nullopt));
    bool result = false;
    if (test) {
      ORCA_ASSIGN_OR_RETURN(result, ApplyTest(interp, *test, subject, test_args));
    } else {
      result = Truthy(subject);
    }
    if (result == select) out.push_back(item);
  }
  return Generator(std::move(out));
}

absl::StatusOr<Value> Select(Interpreter& interp, const Value& v, CallArgs args) {
  return SelectOrReject(interp, v, std::move(args), true, false);
}
absl::StatusOr<Value> Reject(Interpreter& interp, const Value& v, CallArgs args) {
  return SelectOrReject(interp, v, std::move(args), false, false);
}
absl::StatusOr<Value> SelectAttr(Interpreter& interp, const Value& v, CallArgs args) {
  return SelectOrReject(interp, v, std::move(args), true, true);
}
absl::StatusOr<Value> RejectAttr(Interpreter& interp, const Value& v, CallArgs args) {
  return SelectOrReject(interp, v, std::move(args), false, true);
}

absl::StatusOr<Value> Items(Interpreter&, const Value& v, CallArgs args) {
  ORCA_RETURN_IF_ERROR(BindArgs("items", std::move(args), {}, 0).status());
  if (v.is_undefined()) return Generator({});
  if (!v.is_dict()) return TypeError("Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto& [k, val] : v.dict().items) {
    ORCA_ASSIGN_OR_RETURN(Value pair, Value::Seq({k, val}, SeqKind::kTuple));
    out.push_back(std::move(pair));
  }
  return Generator(std::move(out));
}

absl::StatusOr<Value> DictSort(Interpreter&, const Value& v, CallArgs args) {
  ORCA_ASSIGN_OR_RETURN(
      Args a, BindArgs("dictsort", std::move(args), {"case_sensitive", "by", "reverse"}, 0));
  const std::string by = a[1] ? ToStr(*a[1]) : "key";
  if (by != "key" && by != "value") {
    return absl::InvalidArgumentError("You can only sort by either \"key\" or \"value\"");
  }
  if (!v.is_dict())
    return TypeError(absl::StrCat("'", TypeName(v), "' object has no attribute 'items'"));
  std::vector<Value> items;
  std::vector<Value> keys;
  for (const auto& [k, val] : v.dict().items) {
    ORCA_ASSIGN_OR_RETURN(Value pair, Value::Seq({k, val}, SeqKind::kTuple));
    items.push_back(std::move(pair));
    Value key = by == "key" ? k : val;
    if (!CaseSensitive(a[0]) && key.is_string()) key = Value::String(PyLower(key.str()));
    keys.push_back(std::move(key));
  }
  ORCA_ASSIGN_OR_RETURN(std::vector<Value> sorted,
                        SortByKeys(std::move(items), std::move(keys), a[2] && Truthy(*a[2])));
  return Value::Seq(std::move(sorted));
}

absl::StatusOr<Value> Sum(Interpreter& interp, const Value& v, CallArgs args) {
  ORCA_ASSIGN_OR_RETURN(Args a, BindArgs("sum", std::move(args), {"attribute", "start"}, 0));
  ORCA_ASSIGN_OR_RETURN(std::vector<Value> items, interp.Iterate(v));
  Value total = a[1] ? *a[1] : Value::Int(0);
  for (const Value& item : items) {
    ORCA_ASSIGN_OR_RETURN(Value x, GetAttribute(interp, item, a[0], false, std::nullopt));
    if (x.is_undefined()) return UndefinedError(x);
    if (total.is_number() && x.is_number()) {
      if (total.is_float() || x.is_float()) {
        total = Value::Float(total.as_float() + x.as_float());
      } else {
        int64_t r = 0;
        if (__builtin_add_overflow(total.as_int(), x.as_int(), &r)) {
          return absl::InvalidArgumentError("integer overflow");
        }
        total = Value::Int(r);
      }
    } else if (total.is_indexable_seq() && x.is_indexable_seq() &&
               total.seq().kind == x.seq().kind) {
      std::vector<Value> joined = total.seq().items;
      joined.insert(joined.end(), x.seq().items.begin(), x.seq().items.end());
      ORCA_RETURN_IF_ERROR(interp.Allocate(joined.size()));
      ORCA_ASSIGN_OR_RETURN(total, Value::Seq(std::move(joined), total.seq().kind));
    } else {
      return TypeError(absl::StrCat("unsupported operand type(s) for +: '", TypeName(total),
                                    "' and '", TypeName(x), "'"));
    }
  }
  return total;
}

absl::StatusOr<Value> MinOrMax(Interpreter& interp, const Value& v, CallArgs args, bool max) {
  ORCA_ASSIGN_OR_RETURN(
      Args a, BindArgs(max ? "max" : "min", std::move(args), {"case_sensitive", "attribute"}, 0));
  ORCA_ASSIGN_OR_RETURN(std::vector<Value> items, interp.Iterate(v));
  if (items.empty()) return Value::Undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  ORCA_ASSIGN_OR_RETURN(Value best_key,
                        GetAttribute(interp, items[0], a[1], !CaseSensitive(a[0]), std::nullopt));
  for (size_t i = 1; i < items.size(); ++i) {
    ORCA_ASSIGN_OR_RETURN(Value key,
                          GetAttribute(interp, items[i], a[1], !CaseSensitive(a[0]), std::nullopt));
    ORCA_ASSIGN_OR_RETURN(bool better, max ? Less(best_key, key) : Less(key, best_key));
    if (better) {
      best = i;
      best_key = key;
    }
  }
  return items[best];
}

absl::StatusOr<Value> Min(Interpreter& interp, const Value& v, CallArgs args) {
  return MinOrMax(interp, v, std::move(args), false);
}
absl::StatusOr<Value> Max(Interpreter& interp, const Value& v, CallArgs args) {
  return MinOrMax(interp, v, std::move(args), true);
}

absl::StatusOr<Value> Batch(Interpreter& interp, const Value& v, CallArgs args) {
  ORCA_ASSIGN_OR_RETURN(Args a, BindArgs("batch", std::move(args), {"linecount", "fill_with"}, 1));
  if (!a[0]->is_integral() || a[0]->as_int() <= 0) {
    return absl::InvalidArgumentError("batch linecount must be a positive integer");
  }
  const auto size = static_cast<size_t>(a[0]->as_int());
  ORCA_ASSIGN_OR_RETURN(std::vector<Value> items, interp.Iterate(v));
  std::vector<Value> batches;
  for (size_t i = 0; i < items.size(); i += size) {
    std::vector<Value> batch(
        items.begin() + static_cast<std::ptrdiff_t>(i),
        items.begin() + static_cast<std::ptrdiff_t>(std::min(items.size(), i + size)));
    if (batch.size() < size && a[1] && !a[1]->is_none()) batch.resize(size, *a[1]);
    ORCA_ASSIGN_OR_RETURN(Value b, Value::Seq(std::move(batch)));
    batches.push_back(std::move(b));
  }
  return Generator(std::move(batches));
}

}  // namespace

void AddSequenceFilters(FilterTable* table) {
  (*table)["first"] = First;
  (*table)["last"] = Last;
  (*table)["join"] = Join;
  (*table)["list"] = List;
  (*table)["reverse"] = Reverse;
  (*table)["sort"] = Sort;
  (*table)["unique"] = Unique;
  (*table)["map"] = Map;
  (*table)["select"] = Select;
  (*table)["reject"] = Reject;
  (*table)["selectattr"] = SelectAttr;
  (*table)["rejectattr"] = RejectAttr;
  (*table)["items"] = Items;
  (*table)["dictsort"] = DictSort;
  (*table)["sum"] = Sum;
  (*table)["min"] = Min;
  (*table)["max"] = Max;
  (*table)["batch"] = Batch;
}

absl::Status CheckHashable(const Value& v) {
  const bool unhashable = v.is_dict() || (v.is_seq() && v.seq().kind != SeqKind::kTuple &&
                                          v.seq().kind != SeqKind::kIterator);
  if (unhashable) return TypeError(absl::StrCat("unhashable type: '", TypeName(v), "'"));
  if (v.is_seq() && v.seq().kind == SeqKind::kTuple) {
    for (const Value& item : v.seq().items) ORCA_RETURN_IF_ERROR(CheckHashable(item));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> Contains(Interpreter& interp, const Value& container, const Value& item) {
  switch (container.type()) {
    case Value::Type::kUndefined:
      return false;
    case Value::Type::kString:
      if (!item.is_string()) {
        return TypeError(
            absl::StrCat("'in <string>' requires string as left operand, not ", TypeName(item)));
      }
      return container.str().find(item.str()) != std::string::npos;
    case Value::Type::kSeq:
      for (const Value& v : container.seq().items) {
        ORCA_RETURN_IF_ERROR(interp.Step());
        if (Equals(v, item)) return true;
      }
      return false;
    case Value::Type::kDict:
      ORCA_RETURN_IF_ERROR(CheckHashable(item));
      return container.dict().Find(item) != nullptr;
    default:
      return TypeError(
          absl::StrCat("argument of type '", TypeName(container), "' is not iterable"));
  }
}

}  // namespace orca::chat_internal
