// The filter registry and the filters on strings and numbers (jinja2.filters, with the
// `tojson` override from transformers).
#include <cmath>
#include <cstdio>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/chat/internal/builtins.h"
#include "engine/chat/internal/filters_internal.h"
#include "engine/chat/internal/format.h"
#include "engine/chat/internal/interpreter.h"
#include "engine/chat/internal/py_string.h"
#include "engine/common/status_macros.h"

namespace orca::chat_internal {
namespace {

using Args = std::vector<std::optional<Value>>;

absl::Status TypeError(const std::string& message) { return absl::InvalidArgumentError(message); }

// Jinja's soft_str: str(value), keeping Markup.
Value SoftStr(const Value& v) {
  if (v.is_string()) return v;
  return Value::String(ToStr(v));
}

absl::StatusOr<Value> Trim(Interpreter&, const Value& v, CallArgs args) {
  ORCA_ASSIGN_OR_RETURN(Args a, BindArgs("trim", std::move(args), {"chars"}, 0));
  std::optional<std::string> chars;
  if (a[0] && !a[0]->is_none()) chars = ToStr(*a[0]);
  return Value::String(PyStrip(ToStr(v), chars, StripSide::kBoth));
}

absl::StatusOr<Value> CaseFilter(const char* name, const Value& v, CallArgs args,
                                 std::string (*f)(std::string_view)) {
  ORCA_RETURN_IF_ERROR(BindArgs(name, std::move(args), {}, 0).status());
  return Value::String(f(ToStr(v)));
}

absl::StatusOr<Value> Upper(Interpreter&, const Value& v, CallArgs args) {
  return CaseFilter("upper", v, std::move(args), PyUpper);
}
absl::StatusOr<Value> Lower(Interpreter&, const Value& v, CallArgs args) {
  return CaseFilter("lower", v, std::move(args), PyLower);
}
absl::StatusOr<Value> Capitalize(Interpreter&, const Value& v, CallArgs args) {
  return CaseFilter("capitalize", v, std::move(args), PyCapitalize);
}
absl::StatusOr<Value> Title(Interpreter&, const Value& v, CallArgs args) {
  return CaseFilter("title", v, std::move(args), JinjaTitle);
}

absl::StatusOr<Value> Default(Interpreter&, const Value& v, CallArgs args) {
  ORCA_ASSIGN_OR_RETURN(Args a,
                        BindArgs("default", std::move(args), {"default_value", "boolean"}, 0));
  const bool boolean = a[1] && Truthy(*a[1]);
  if (v.is_undefined() || (boolean && !Truthy(v))) {
    return a[0] ? *a[0] : Value::String("");
  }
  return v;
}

absl::StatusOr<Value> Length(Interpreter&, const Value& v, CallArgs args) {
  ORCA_RETURN_IF_ERROR(BindArgs("length", std::move(args), {}, 0).status());
  switch (v.type()) {
    case Value::Type::kUndefined:
      return Value::Int(0);
    case Value::Type::kString:
      return Value::Int(static_cast<int64_t>(CodePointCount(v.str())));
    case Value::Type::kSeq:
      if (v.seq().kind != SeqKind::kIterator) {
        return Value::Int(static_cast<int64_t>(v.seq().items.size()));
      }
      break;
    case Value::Type::kDict:
      return Value::Int(static_cast<int64_t>(v.dict().items.size()));
    default:
      break;
  }
  return TypeError(absl::StrCat("object of type '", TypeName(v), "' has no len()"));
}

absl::StatusOr<Value> ToJson(Interpreter& interp, const Value& v, CallArgs args) {
  ORCA_ASSIGN_OR_RETURN(Args a, BindArgs("tojson", std::move(args),
                                         {"ensure_ascii", "indent", "separators", "sort_keys"}, 0));
  JsonDumpOptions options;
  options.ensure_ascii = a[0] && Truthy(*a[0]);
  if (a[1] && !a[1]->is_none()) {
    options.has_indent = true;
    if (a[1]->is_integral()) {
      options.indent =
          std::string(static_cast<size_t>(std::clamp<int64_t>(a[1]->as_int(), 0, 64)), ' ');
    } else if (a[1]->is_string()) {
      options.indent = a[1]->str();
    } else {
      return TypeError("indent must be an int or a str");
    }
    options.item_separator.assign(1, ',');
  }
  if (a[2] && !a[2]->is_none()) {
    ORCA_ASSIGN_OR_RETURN(std::vector<Value> seps, interp.Iterate(*a[2]));
    if (seps.size() != 2 || !seps[0].is_string() || !seps[1].is_string()) {
      return TypeError("separators must be a pair of strings");
    }
    options.item_separator = seps[0].str();
    options.key_separator = seps[1].str();
  }
  options.sort_keys = a[3] && Truthy(*a[3]);
  ORCA_ASSIGN_OR_RETURN(std::string out, JsonDumps(v, options));
  ORCA_RETURN_IF_ERROR(interp.Allocate(out.size()));
  return Value::String(std::move(out));
}

absl::StatusOr<Value> StringFilter(Interpreter&, const Value& v, CallArgs args) {
  ORCA_RETURN_IF_ERROR(BindArgs("string", std::move(args), {}, 0).status());
  return SoftStr(v);
}

absl::StatusOr<Value> Safe(Interpreter&, const Value& v, CallArgs args) {
  ORCA_RETURN_IF_ERROR(BindArgs("safe", std::move(args), {}, 0).status());
  return Value::String(ToStr(v), true);
}

absl::StatusOr<Value> Escape(Interpreter&, const Value& v, CallArgs args) {
  ORCA_RETURN_IF_ERROR(BindArgs("escape", std::move(args), {}, 0).status());
  if (v.is_string() && v.safe()) return v;
  return Value::String(HtmlEscape(ToStr(v)), true);
}

absl::StatusOr<Value> ForceEscape(Interpreter&, const Value& v, CallArgs args) {
  ORCA_RETURN_IF_ERROR(BindArgs("forceescape", std::move(args), {}, 0).status());
  return Value::String(HtmlEscape(ToStr(v)), true);
}

absl::StatusOr<Value> Replace(Interpreter& interp, const Value& v, CallArgs args) {
  ORCA_ASSIGN_OR_RETURN(Args a, BindArgs("replace", std::move(args), {"old", "new", "count"}, 2));
  int64_t count = -1;
  if (a[2] && !a[2]->is_none()) {
    if (!a[2]->is_integral()) return TypeError("replace() count must be an integer");
    count = a[2]->as_int();
  }
  std::string out = PyReplace(ToStr(v), ToStr(*a[0]), ToStr(*a[1]), count);
  ORCA_RETURN_IF_ERROR(interp.Allocate(out.size()));
  return Value::String(std::move(out));
}

absl::StatusOr<Value> Int(Interpreter&, const Value& v, CallArgs args) {
  ORCA_ASSIGN_OR_RETURN(Args a, BindArgs("int", std::move(args), {"default", "base"}, 0));
  const Value fallback = a[0] ? *a[0] : Value::Int(0);
  int base = 10;
  if (a[1] && a[1]->is_integral()) base = static_cast<int>(a[1]->as_int());
  if (v.is_undefined()) return UndefinedError(v);
  if (v.is_integral()) return Value::Int(v.as_int());
  if (v.is_float()) {
    const double d = v.as_float();
    if (std::isnan(d) || std::isinf(d)) {
      return absl::InvalidArgumentError("cannot convert float NaN or infinity to integer");
    }
    if (std::fabs(d) >= 9.2e18) return absl::InvalidArgumentError("integer overflow");
    return Value::Int(static_cast<int64_t>(d));
  }
  if (v.is_string()) {
    if (std::optional<int64_t> i = PyParseInt(v.str(), base)) return Value::Int(*i);
    if (std::optional<double> d = PyParseFloat(v.str())) {
      if (std::isnan(*d) || std::isinf(*d)) {
        return absl::InvalidArgumentError("cannot convert float NaN or infinity to integer");
      }
      if (std::fabs(*d) >= 9.2e18) return absl::InvalidArgumentError("integer overflow");
      return Value::Int(static_cast<int64_t>(*d));
    }
  }
  return fallback;
}

absl::StatusOr<Value> Float(Interpreter&, const Value& v, CallArgs args) {
  ORCA_ASSIGN_OR_RETURN(Args a, BindArgs("float", std::move(args), {"default"}, 0));
  const Value fallback = a[0] ? *a[0] : Value::Float(0.0);
  if (v.is_undefined()) return UndefinedError(v);
  if (v.is_number()) return Value::Float(v.as_float());
  if (v.is_string()) {
    if (std::optional<double> d = PyParseFloat(v.str())) return Value::Float(*d);
  }
  return fallback;
}

absl::StatusOr<Value> Abs(Interpreter&, const Value& v, CallArgs args) {
  ORCA_RETURN_IF_ERROR(BindArgs("abs", std::move(args), {}, 0).status());
  if (v.is_undefined()) return UndefinedError(v);
  if (v.is_float()) return Value::Float(std::fabs(v.as_float()));
  if (v.is_integral()) {
    if (v.as_int() == INT64_MIN) return absl::InvalidArgumentError("integer overflow");
    return Value::Int(v.as_int() < 0 ? -v.as_int() : v.as_int());
  }
  return TypeError(absl::StrCat("bad operand type for abs(): '", TypeName(v), "'"));
}

// Python's round(x, ndigits) for floats: correctly rounded, ties to even.
double RoundFloat(double x, int64_t ndigits) {
  if (!std::isfinite(x)) return x;
  if (ndigits == 0) return std::nearbyint(x);
  if (ndigits > 0) {
    if (ndigits > 300) return x;
    char buf[512];
    std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(ndigits), x);
    return std::strtod(buf, nullptr);
  }
  const double scale = std::pow(10.0, static_cast<double>(-ndigits));
  return std::nearbyint(x / scale) * scale;
}

absl::StatusOr<Value> Round(Interpreter&, const Value& v, CallArgs args) {
  ORCA_ASSIGN_OR_RETURN(Args a, BindArgs("round", std::move(args), {"precision", "method"}, 0));
  int64_t precision = 0;
  if (a[0]) {
    if (!a[0]->is_integral()) return TypeError("precision must be an integer");
    precision = a[0]->as_int();
  }
  const std::string method = a[1] ? ToStr(*a[1]) : "common";
  if (method != "common" && method != "ceil" && method != "floor") {
    return absl::InvalidArgumentError("method must be common, ceil or floor");
  }
  if (v.is_undefined()) return UndefinedError(v);
  if (!v.is_number()) {
    return TypeError(absl::StrCat("type ", TypeName(v), " doesn't define __round__ method"));
  }
  if (method != "common") {
    const double scale = std::pow(10.0, static_cast<double>(precision));
    const double x = v.as_float() * scale;
    return Value::Float((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
  }
  if (v.is_integral()) {
    if (precision >= 0) return Value::Int(v.as_int());
    if (precision < -18) return Value::Int(0);
    int64_t scale = 1;
    for (int64_t i = 0; i < -precision; ++i) scale *= 10;
    const int64_t x = v.as_int();
    int64_t q = x / scale;
    int64_t r = x % scale;
    if (r < 0) {
      r += scale;
      --q;
    }
    if (2 * r > scale || (2 * r == scale && (q % 2 != 0))) ++q;
    return Value::Int(q * scale);
  }
  return Value::Float(RoundFloat(v.as_float(), precision));
}

absl::StatusOr<Value> Indent(Interpreter& interp, const Value& v, CallArgs args) {
  ORCA_ASSIGN_OR_RETURN(Args a,
                        BindArgs("indent", std::move(args), {"width", "first", "blank"}, 0));
  std::string indention = "    ";
  if (a[0]) {
    if (a[0]->is_string()) {
      indention = a[0]->str();
    } else if (a[0]->is_integral()) {
      indention =
          std::string(static_cast<size_t>(std::clamp<int64_t>(a[0]->as_int(), 0, 1000)), ' ');
    } else {
      return TypeError("indent width must be an int or a str");
    }
  }
  const bool first = a[1] && Truthy(*a[1]);
  const bool blank = a[2] && Truthy(*a[2]);
  // Jinja appends "\n" to the value before splitting: only strings survive that.
  if (v.is_undefined()) return UndefinedError(v);
  if (!v.is_string()) {
    return TypeError(
        absl::StrCat("unsupported operand type(s) for +=: '", TypeName(v), "' and 'str'"));
  }
  const std::vector<std::string> lines = PySplitLines(ToStr(v) + "\n", false);
  std::string out = first ? indention : "";
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += "\n";
    if (i > 0 && (blank || !lines[i].empty())) out += indention;
    out += lines[i];
  }
  ORCA_RETURN_IF_ERROR(interp.Allocate(out.size()));
  return Value::String(std::move(out));
}

absl::StatusOr<Value> Center(Interpreter& interp, const Value& v, CallArgs args) {
  ORCA_ASSIGN_OR_RETURN(Args a, BindArgs("center", std::move(args), {"width"}, 0));
  CallArgs method_args;
  method_args.positional.push_back(a[0] ? *a[0] : Value::Int(80));
  return CallMethod(interp, Value::String(ToStr(v)), "center", std::move(method_args));
}

absl::StatusOr<Value> WordCount(Interpreter&, const Value& v, CallArgs args) {
  ORCA_RETURN_IF_ERROR(BindArgs("wordcount", std::move(args), {}, 0).status());
  int64_t words = 0;
  bool in_word = false;
  for (char32_t cp : DecodeUtf8(ToStr(v))) {
    const bool word_char = IsPyAlpha(cp) || IsPyDigit(cp) || cp == '_';
    if (word_char && !in_word) ++words;
    in_word = word_char;
  }
  return Value::Int(words);
}

absl::StatusOr<Value> FormatFilter(Interpreter& interp, const Value& v, CallArgs args) {
  if (!args.positional.empty() && !args.keyword.empty()) {
    return absl::InvalidArgumentError(
        "can't handle positional and keyword arguments at the same time");
  }
  Value params;
  if (!args.keyword.empty()) {
    std::vector<std::pair<Value, Value>> items;
    for (auto& [k, val] : args.keyword) items.emplace_back(Value::String(k), std::move(val));
    ORCA_ASSIGN_OR_RETURN(params, Value::Dict(std::move(items)));
  } else {
    ORCA_ASSIGN_OR_RETURN(params, Value::Seq(std::move(args.positional), SeqKind::kTuple));
  }
  ORCA_ASSIGN_OR_RETURN(std::string out, PercentFormat(interp, ToStr(v), params));
  return Value::String(std::move(out));
}

absl::StatusOr<Value> Attr(Interpreter& interp, const Value& v, CallArgs args) {
  ORCA_ASSIGN_OR_RETURN(Args a, BindArgs("attr", std::move(args), {"name"}, 1));
  const std::string name = ToStr(*a[0]);
  if (v.is_dict()) return GetMethod(v, name);
  return interp.GetAttr(v, name);
}

}  // namespace

void AddStringFilters(FilterTable* table) {
  (*table)["trim"] = Trim;
  (*table)["upper"] = Upper;
  (*table)["lower"] = Lower;
  (*table)["capitalize"] = Capitalize;
  (*table)["title"] = Title;
  (*table)["default"] = Default;
  (*table)["d"] = Default;
  (*table)["length"] = Length;
  (*table)["count"] = Length;
  (*table)["tojson"] = ToJson;
  (*table)["string"] = StringFilter;
  (*table)["safe"] = Safe;
  (*table)["escape"] = Escape;
  (*table)["e"] = Escape;
  (*table)["forceescape"] = ForceEscape;
  (*table)["replace"] = Replace;
  (*table)["int"] = Int;
  (*table)["float"] = Float;
  (*table)["abs"] = Abs;
  (*table)["round"] = Round;
  (*table)["indent"] = Indent;
  (*table)["center"] = Center;
  (*table)["wordcount"] = WordCount;
  (*table)["format"] = FormatFilter;
  (*table)["attr"] = Attr;
}

namespace {

const FilterTable& Filters() {
  static const FilterTable* table = [] {
    auto* t = new FilterTable();
    AddStringFilters(t);
    AddSequenceFilters(t);
    return t;
  }();
  return *table;
}

// Jinja2 builtins that orca does not implement: known names, failing when applied.
bool IsUnsupportedFilter(const std::string& name) {
  static const char* const kNames[] = {"filesizeformat", "groupby",   "pprint",   "random",
                                       "slice",          "striptags", "truncate", "urlencode",
                                       "urlize",         "wordwrap",  "xmlattr"};
  for (const char* n : kNames) {
    if (name == n) return true;
  }
  return false;
}

}  // namespace

bool IsKnownFilter(const std::string& name) {
  return Filters().count(name) > 0 || IsUnsupportedFilter(name);
}

absl::StatusOr<Value> ApplyFilter(Interpreter& interp, const std::string& name,
                                  const Value& subject, CallArgs args) {
  ORCA_RETURN_IF_ERROR(interp.Step());
  auto it = Filters().find(name);
  if (it == Filters().end()) {
    if (IsUnsupportedFilter(name)) {
      return absl::UnimplementedError(absl::StrCat("the '", name, "' filter is not supported"));
    }
    return absl::InvalidArgumentError(absl::StrCat("no filter named '", name, "'"));
  }
  return it->second(interp, subject, std::move(args));
}

absl::StatusOr<Value> GetAttribute(Interpreter& interp, const Value& item,
                                   const std::optional<Value>& attribute, bool lower,
                                   const std::optional<Value>& fallback) {
  Value v = item;
  if (attribute && !attribute->is_none()) {
    std::vector<Value> parts;
    if (attribute->is_integral()) {
      parts.push_back(Value::Int(attribute->as_int()));
    } else {
      for (const std::string& part : PySplit(ToStr(*attribute), std::string("."), -1, false)) {
        const bool digits =
            !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
        std::optional<int64_t> index = digits ? PyParseInt(part, 10) : std::nullopt;
        parts.push_back(index ? Value::Int(*index) : Value::String(part));
      }
    }
    for (const Value& part : parts) {
      ORCA_ASSIGN_OR_RETURN(v, interp.GetItem(v, part));
    }
  }
  if (fallback && !fallback->is_none() && v.is_undefined()) v = *fallback;
  if (lower && v.is_string()) v = Value::String(PyLower(v.str()));
  return v;
}

absl::StatusOr<Value> Generator(std::vector<Value> items) {
  return Value::Seq(std::move(items), SeqKind::kIterator);
}

}  // namespace orca::chat_internal
