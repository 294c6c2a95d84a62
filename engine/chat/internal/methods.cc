// Python methods of str, dict, list and tuple that the immutable sandbox exposes, the
// global functions, and argument binding.
#include <ctime>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/chat/internal/builtins.h"
#include "engine/chat/internal/format.h"
#include "engine/chat/internal/interpreter.h"
#include "engine/chat/internal/py_string.h"
#include "engine/common/status_macros.h"

namespace orca::chat_internal {
namespace {

using Args = std::vector<std::optional<Value>>;

absl::Status TypeError(const std::string& message) { return absl::InvalidArgumentError(message); }

class BoundMethod : public Object {
 public:
  BoundMethod(Value receiver, std::string name)
      : receiver_(std::move(receiver)), name_(std::move(name)) {}
  std::string Repr() const override {
    return absl::StrCat("<built-in method ", name_, " of ", TypeName(receiver_), " object>");
  }
  bool callable() const override { return true; }
  absl::StatusOr<Value> Call(Interpreter& interp, CallArgs args) const override {
    return CallMethod(interp, receiver_, name_, std::move(args));
  }

 private:
  Value receiver_;
  std::string name_;
};

class Function : public Object {
 public:
  using Fn = absl::StatusOr<Value> (*)(Interpreter&, CallArgs);
  Function(std::string name, Fn fn) : name_(std::move(name)), fn_(fn) {}
  std::string Repr() const override { return "<function " + name_ + ">"; }
  bool callable() const override { return true; }
  absl::StatusOr<Value> Call(Interpreter& interp, CallArgs args) const override {
    return fn_(interp, std::move(args));
  }

 private:
  std::string name_;
  Fn fn_;
};

// jinja2.utils.Joiner.
class Joiner : public Object {
 public:
  explicit Joiner(std::string sep) : sep_(std::move(sep)) {}
  std::string Repr() const override { return "<Joiner>"; }
  bool callable() const override { return true; }
  absl::StatusOr<Value> Call(Interpreter&, CallArgs) const override {
    if (!used_) {
      used_ = true;
      return Value::String("");
    }
    return Value::String(sep_);
  }

 private:
  std::string sep_;
  mutable bool used_ = false;
};

const std::set<std::string>& StrMethods() {
  static const auto* names = new std::set<std::string>{
      "capitalize", "center",     "count",      "endswith",     "find",         "format",
      "index",      "isalnum",    "isalpha",    "isdecimal",    "isdigit",      "islower",
      "isnumeric",  "isspace",    "istitle",    "isupper",      "join",         "ljust",
      "lower",      "lstrip",     "partition",  "removeprefix", "removesuffix", "replace",
      "rfind",      "rindex",     "rjust",      "rpartition",   "rsplit",       "rstrip",
      "split",      "splitlines", "startswith", "strip",        "swapcase",     "title",
      "upper",      "zfill"};
  return *names;
}

absl::StatusOr<std::string> StrArg(const std::optional<Value>& v, const std::string& what) {
  if (v && v->is_string()) return v->str();
  return TypeError(
      absl::StrCat(what, " must be str, not ", v ? TypeName(*v) : std::string("nothing")));
}

std::optional<std::string> OptionalStr(const std::optional<Value>& v) {
  if (!v || v->is_none()) return std::nullopt;
  return ToStr(*v);
}

absl::StatusOr<int64_t> IntArg(const std::optional<Value>& v, int64_t fallback,
                               const std::string& what) {
  if (!v || v->is_none()) return fallback;
  if (v->is_integral()) return v->as_int();
  return TypeError(absl::StrCat(what, " must be an integer, not ", TypeName(*v)));
}

// s[start:end] in code points, for the start/end arguments of find() and friends.
std::string Window(const std::string& s, const std::optional<Value>& start,
                   const std::optional<Value>& end, int64_t* offset) {
  const std::vector<char32_t> cps = DecodeUtf8(s);
  const auto n = static_cast<int64_t>(cps.size());
  auto clamp = [n](const std::optional<Value>& v, int64_t dflt) {
    if (!v || !v->is_integral()) return dflt;
    int64_t x = v->as_int();
    if (x < 0) x = std::max<int64_t>(0, x + n);
    return std::min(x, n);
  };
  const int64_t b = clamp(start, 0);
  const int64_t e = clamp(end, n);
  *offset = b;
  return e > b ? EncodeUtf8(cps, b, e) : std::string();
}

absl::StatusOr<Value> Pad(const std::string& s, const std::string& method, const Args& a) {
  ORCA_ASSIGN_OR_RETURN(int64_t width, IntArg(a[0], 0, "width"));
  std::string fill = " ";
  if (a[1]) {
    ORCA_ASSIGN_OR_RETURN(fill, StrArg(a[1], "fillchar"));
    if (CodePointCount(fill) != 1)
      return TypeError("the fill character must be exactly one character long");
  }
  const auto len = static_cast<int64_t>(CodePointCount(s));
  if (width <= len) return Value::String(s);
  const int64_t total = width - len;
  int64_t left = 0;
  if (method == "rjust") {
    left = total;
  } else if (method == "center") {
    left = total / 2 + (total & width & 1);
  }
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += s;
  for (int64_t i = 0; i < total - left; ++i) out += fill;
  return Value::String(std::move(out));
}

absl::StatusOr<Value> StringList(std::vector<std::string> parts, SeqKind kind) {
  std::vector<Value> items;
  items.reserve(parts.size());
  for (std::string& p : parts) items.push_back(Value::String(std::move(p)));
  return Value::Seq(std::move(items), kind);
}

template <typename Pred>
Value AllCodePoints(const std::string& s, Pred pred) {
  const std::vector<char32_t> cps = DecodeUtf8(s);
  if (cps.empty()) return Value::Bool(false);
  for (char32_t cp : cps) {
    if (!pred(cp)) return Value::Bool(false);
  }
  return Value::Bool(true);
}

absl::StatusOr<Value> CallStrMethod(Interpreter& interp, const std::string& s,
                                    const std::string& name, CallArgs args) {
  auto bind = [&](std::vector<std::string> params, size_t required) {
    return BindArgs(name, std::move(args), params, required);
  };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    ORCA_ASSIGN_OR_RETURN(Args a, bind({"chars"}, 0));
    const StripSide side = name == "strip"    ? StripSide::kBoth
                           : name == "lstrip" ? StripSide::kLeft
                                              : StripSide::kRight;
    return Value::String(PyStrip(s, OptionalStr(a[0]), side));
  }
  if (name == "split" || name == "rsplit") {
    ORCA_ASSIGN_OR_RETURN(Args a, bind({"sep", "maxsplit"}, 0));
    std::optional<std::string> sep = OptionalStr(a[0]);
    if (sep && sep->empty()) return absl::InvalidArgumentError("empty separator");
    ORCA_ASSIGN_OR_RETURN(int64_t maxsplit, IntArg(a[1], -1, "maxsplit"));
    return StringList(PySplit(s, sep, maxsplit, name == "rsplit"), SeqKind::kList);
  }
  if (name == "splitlines") {
    ORCA_ASSIGN_OR_RETURN(Args a, bind({"keepends"}, 0));
    return StringList(PySplitLines(s, a[0] && Truthy(*a[0])), SeqKind::kList);
  }
  if (name == "startswith" || name == "endswith") {
    ORCA_ASSIGN_OR_RETURN(Args a, bind({"prefix", "start", "end"}, 1));
    int64_t offset = 0;
    const std::string window = Window(s, a[1], a[2], &offset);
    std::vector<Value> candidates;
    if (a[0]->is_seq() && a[0]->seq().kind == SeqKind::kTuple) {
      candidates = a[0]->seq().items;
    } else {
      candidates.push_back(*a[0]);
    }
    for (const Value& c : candidates) {
      ORCA_ASSIGN_OR_RETURN(std::string affix, StrArg(c, name + " argument"));
      const bool match = affix.size() <= window.size() &&
                         (name == "startswith" ? window.compare(0, affix.size(), affix) == 0
                                               : window.compare(window.size() - affix.size(),
                                                                affix.size(), affix) == 0);
      if (match) return Value::Bool(true);
    }
    return Value::Bool(false);
  }
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize" ||
      name == "swapcase") {
    ORCA_RETURN_IF_ERROR(bind({}, 0).status());
    if (name == "upper") return Value::String(PyUpper(s));
    if (name == "lower") return Value::String(PyLower(s));
    if (name == "title") return Value::String(PyTitle(s));
    if (name == "capitalize") return Value::String(PyCapitalize(s));
    return Value::String(PySwapcase(s));
  }
  if (name == "replace") {
    ORCA_ASSIGN_OR_RETURN(Args a, bind({"old", "new", "count"}, 2));
    ORCA_ASSIGN_OR_RETURN(std::string old_sub, StrArg(a[0], "replace() argument 1"));
    ORCA_ASSIGN_OR_RETURN(std::string new_sub, StrArg(a[1], "replace() argument 2"));
    ORCA_ASSIGN_OR_RETURN(int64_t count, IntArg(a[2], -1, "count"));
    std::string out = PyReplace(s, old_sub, new_sub, count);
    ORCA_RETURN_IF_ERROR(interp.Allocate(out.size()));
    return Value::String(std::move(out));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    ORCA_ASSIGN_OR_RETURN(Args a, bind({"sub", "start", "end"}, 1));
    ORCA_ASSIGN_OR_RETURN(std::string sub, StrArg(a[0], name + " argument"));
    int64_t offset = 0;
    const std::string window = Window(s, a[1], a[2], &offset);
    if (name == "count") return Value::Int(PyCount(window, sub));
    const int64_t pos = PyFind(window, sub, name[0] == 'r');
    if (pos < 0 && (name == "index" || name == "rindex")) {
      return absl::InvalidArgumentError("substring not found");
    }
    return Value::Int(pos < 0 ? -1 : pos + offset);
  }
  if (name == "join") {
    ORCA_ASSIGN_OR_RETURN(Args a, bind({"iterable"}, 1));
    ORCA_ASSIGN_OR_RETURN(std::vector<Value> items, interp.Iterate(*a[0]));
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is_string()) {
        return TypeError(absl::StrCat("sequence item ", i, ": expected str instance, ",
                                      TypeName(items[i]), " found"));
      }
      if (i > 0) out += s;
      out += items[i].str();
      ORCA_RETURN_IF_ERROR(interp.CheckSize(out.size()));
    }
    ORCA_RETURN_IF_ERROR(interp.Allocate(out.size()));
    return Value::String(std::move(out));
  }
  if (name == "format") {
    ORCA_ASSIGN_OR_RETURN(std::string out, BraceFormat(interp, s, args));
    return Value::String(std::move(out));
  }
  if (name == "center" || name == "ljust" || name == "rjust") {
    ORCA_ASSIGN_OR_RETURN(Args a, bind({"width", "fillchar"}, 1));
    ORCA_ASSIGN_OR_RETURN(int64_t width, IntArg(a[0], 0, "width"));
    ORCA_RETURN_IF_ERROR(interp.Allocate(static_cast<size_t>(std::max<int64_t>(0, width))));
    return Pad(s, name, a);
  }
  if (name == "zfill") {
    ORCA_ASSIGN_OR_RETURN(Args a, bind({"width"}, 1));
    ORCA_ASSIGN_OR_RETURN(int64_t width, IntArg(a[0], 0, "width"));
    ORCA_RETURN_IF_ERROR(interp.Allocate(static_cast<size_t>(std::max<int64_t>(0, width))));
    const auto len = static_cast<int64_t>(CodePointCount(s));
    if (width <= len) return Value::String(s);
    std::string out = s;
    size_t insert_at = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
    out.insert(insert_at, std::string(static_cast<size_t>(width - len), '0'));
    return Value::String(std::move(out));
  }
  if (name == "removeprefix" || name == "removesuffix") {
    ORCA_ASSIGN_OR_RETURN(Args a, bind({"affix"}, 1));
    ORCA_ASSIGN_OR_RETURN(std::string affix, StrArg(a[0], name + " argument"));
    if (name == "removeprefix" && s.compare(0, affix.size(), affix) == 0) {
      return Value::String(s.substr(affix.size()));
    }
    if (name == "removesuffix" && !affix.empty() && s.size() >= affix.size() &&
        s.compare(s.size() - affix.size(), affix.size(), affix) == 0) {
      return Value::String(s.substr(0, s.size() - affix.size()));
    }
    return Value::String(s);
  }
  if (name == "partition" || name == "rpartition") {
    ORCA_ASSIGN_OR_RETURN(Args a, bind({"sep"}, 1));
    ORCA_ASSIGN_OR_RETURN(std::string sep, StrArg(a[0], name + " argument"));
    if (sep.empty()) return absl::InvalidArgumentError("empty separator");
    const size_t pos = name == "partition" ? s.find(sep) : s.rfind(sep);
    if (pos == std::string::npos) {
      return name == "partition" ? StringList({s, "", ""}, SeqKind::kTuple)
                                 : StringList({"", "", s}, SeqKind::kTuple);
    }
    return StringList({s.substr(0, pos), sep, s.substr(pos + sep.size())}, SeqKind::kTuple);
  }
  ORCA_RETURN_IF_ERROR(bind({}, 0).status());
  if (name == "isspace") return AllCodePoints(s, IsPySpace);
  if (name == "isalpha") return AllCodePoints(s, IsPyAlpha);
  if (name == "isdigit" || name == "isdecimal" || name == "isnumeric") {
    return AllCodePoints(s, IsPyDigit);
  }
  if (name == "isalnum") {
    return AllCodePoints(s, [](char32_t cp) { return IsPyAlpha(cp) || IsPyDigit(cp); });
  }
  if (name == "islower" || name == "isupper") {
    bool cased = false;
    for (char32_t cp : DecodeUtf8(s)) {
      if (name == "islower" ? IsUpperCp(cp) : IsLowerCp(cp)) return Value::Bool(false);
      cased = cased || IsUpperCp(cp) || IsLowerCp(cp);
    }
    return Value::Bool(cased);
  }
  if (name == "istitle") return Value::Bool(!s.empty() && PyTitle(s) == s && PyLower(s) != s);
  return TypeError(absl::StrCat("str has no method '", name, "'"));
}

absl::StatusOr<Value> CallDictMethod(const Value& d, const std::string& name, CallArgs args) {
  if (name == "get") {
    ORCA_ASSIGN_OR_RETURN(Args a, BindArgs(name, std::move(args), {"key", "default"}, 1));
    if (const Value* v = d.dict().Find(*a[0])) return *v;
    return a[1] ? *a[1] : Value::None();
  }
  ORCA_RETURN_IF_ERROR(BindArgs(name, std::move(args), {}, 0).status());
  if (name == "copy") return d;
  std::vector<Value> items;
  for (const auto& [k, v] : d.dict().items) {
    if (name == "keys") {
      items.push_back(k);
    } else if (name == "values") {
      items.push_back(v);
    } else {
      ORCA_ASSIGN_OR_RETURN(Value pair, Value::Seq({k, v}, SeqKind::kTuple));
      items.push_back(std::move(pair));
    }
  }
  const SeqKind kind = name == "keys"     ? SeqKind::kDictKeys
                       : name == "values" ? SeqKind::kDictValues
                                          : SeqKind::kDictItems;
  return Value::Seq(std::move(items), kind);
}

absl::StatusOr<Value> CallSeqMethod(const Value& seq, const std::string& name, CallArgs args) {
  if (name == "copy") {
    ORCA_RETURN_IF_ERROR(BindArgs(name, std::move(args), {}, 0).status());
    return seq;
  }
  ORCA_ASSIGN_OR_RETURN(Args a, BindArgs(name, std::move(args), {"value"}, 1));
  const auto& items = seq.seq().items;
  int64_t count = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!Equals(items[i], *a[0])) continue;
    if (name == "index") return Value::Int(static_cast<int64_t>(i));
    ++count;
  }
  if (name == "index") return absl::InvalidArgumentError(Repr(*a[0]) + " is not in list");
  return Value::Int(count);
}

// Global functions.

absl::StatusOr<Value> Range(Interpreter& interp, CallArgs args) {
  if (!args.keyword.empty()) return TypeError("range() takes no keyword arguments");
  std::vector<int64_t> n;
  for (const Value& v : args.positional) {
    if (!v.is_integral()) {
      return TypeError(
          absl::StrCat("'", TypeName(v), "' object cannot be interpreted as an integer"));
    }
    n.push_back(v.as_int());
  }
  if (n.empty() || n.size() > 3) return TypeError("range expected 1 to 3 arguments");
  const int64_t start = n.size() == 1 ? 0 : n[0];
  const int64_t stop = n.size() == 1 ? n[0] : n[1];
  const int64_t step = n.size() == 3 ? n[2] : 1;
  if (step == 0) return absl::InvalidArgumentError("range() arg 3 must not be zero");
  const double count = std::max(0.0, std::ceil((static_cast<double>(stop) - start) / step));
  if (count > 100000) {
    return absl::InvalidArgumentError(
        "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  }
  ORCA_RETURN_IF_ERROR(interp.Allocate(static_cast<size_t>(count)));
  std::vector<Value> items;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) items.push_back(Value::Int(i));
  return Value::Seq(std::move(items));
}

// dict(*args, **kwargs) as pairs.
absl::StatusOr<std::vector<std::pair<Value, Value>>> DictItems(Interpreter& interp, CallArgs args) {
  if (args.positional.size() > 1) return TypeError("dict expected at most 1 argument");
  std::vector<std::pair<Value, Value>> items;
  auto put = [&items](Value k, Value v) {
    for (auto& [key, val] : items) {
      if (Equals(key, k)) {
        val = std::move(v);
        return;
      }
    }
    items.emplace_back(std::move(k), std::move(v));
  };
  if (!args.positional.empty()) {
    const Value& src = args.positional[0];
    if (src.is_dict()) {
      for (const auto& [k, v] : src.dict().items) put(k, v);
    } else {
      ORCA_ASSIGN_OR_RETURN(std::vector<Value> pairs, interp.Iterate(src));
      for (const Value& p : pairs) {
        ORCA_ASSIGN_OR_RETURN(std::vector<Value> kv, interp.Iterate(p));
        if (kv.size() != 2) return TypeError("dictionary update sequence element has wrong length");
        put(kv[0], kv[1]);
      }
    }
  }
  for (auto& [k, v] : args.keyword) put(Value::String(k), std::move(v));
  return items;
}

absl::StatusOr<Value> MakeDict(Interpreter& interp, CallArgs args) {
  ORCA_ASSIGN_OR_RETURN(auto items, DictItems(interp, std::move(args)));
  return Value::Dict(std::move(items));
}

absl::StatusOr<Value> MakeNamespace(Interpreter& interp, CallArgs args) {
  ORCA_ASSIGN_OR_RETURN(auto items, DictItems(interp, std::move(args)));
  std::shared_ptr<Namespace> ns = interp.NewNamespace();
  for (auto& [k, v] : items) ns->SetAttr(ToStr(k), std::move(v));
  return Value::Obj(ns);
}

absl::StatusOr<Value> RaiseException(Interpreter&, CallArgs args) {
  std::string message = args.positional.empty() ? "" : ToStr(args.positional[0]);
  // kAborted marks a template-raised error: its message is passed on unchanged.
  return absl::AbortedError(message);
}

absl::StatusOr<Value> StrftimeNow(Interpreter&, CallArgs args) {
  ORCA_ASSIGN_OR_RETURN(Args a, BindArgs("strftime_now", std::move(args), {"format"}, 1));
  ORCA_ASSIGN_OR_RETURN(std::string format, StrArg(a[0], "strftime_now() argument"));
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  if (format.empty()) return Value::String("");
  std::string buf(format.size() * 8 + 64, '\0');
  const size_t n = std::strftime(buf.data(), buf.size(), format.c_str(), &local);
  buf.resize(n);
  return Value::String(std::move(buf));
}

absl::StatusOr<Value> MakeJoiner(Interpreter&, CallArgs args) {
  ORCA_ASSIGN_OR_RETURN(Args a, BindArgs("joiner", std::move(args), {"sep"}, 0));
  return Value::Obj(std::make_shared<Joiner>(a[0] ? ToStr(*a[0]) : ", "));
}

}  // namespace

absl::StatusOr<std::vector<std::optional<Value>>> BindArgs(const std::string& function,
                                                           CallArgs args,
                                                           const std::vector<std::string>& params,
                                                           size_t required) {
  std::vector<std::optional<Value>> bound(params.size());
  if (args.positional.size() > params.size()) {
    return TypeError(absl::StrCat(function, "() takes at most ", params.size(), " argument(s) (",
                                  args.positional.size(), " given)"));
  }
  for (size_t i = 0; i < args.positional.size(); ++i) bound[i] = std::move(args.positional[i]);
  for (auto& [name, value] : args.keyword) {
    size_t i = 0;
    while (i < params.size() && params[i] != name) ++i;
    if (i == params.size()) {
      return TypeError(
          absl::StrCat(function, "() got an unexpected keyword argument '", name, "'"));
    }
    if (bound[i]) {
      return TypeError(absl::StrCat(function, "() got multiple values for argument '", name, "'"));
    }
    bound[i] = std::move(value);
  }
  for (size_t i = 0; i < required; ++i) {
    if (!bound[i]) {
      return TypeError(absl::StrCat(function, "() missing required argument '", params[i], "'"));
    }
  }
  return bound;
}

Value GetMethod(const Value& receiver, const std::string& name) {
  bool exposed = false;
  if (receiver.is_string()) {
    exposed = StrMethods().count(name) > 0;
  } else if (receiver.is_dict()) {
    exposed =
        name == "get" || name == "items" || name == "keys" || name == "values" || name == "copy";
  } else if (receiver.is_indexable_seq()) {
    exposed = name == "count" || name == "index" ||
              (name == "copy" && receiver.seq().kind == SeqKind::kList);
  }
  if (!exposed) {
    return Value::Undefined(absl::StrCat("access to attribute '", name, "' of '",
                                         TypeName(receiver), "' object is unavailable"));
  }
  return Value::Obj(std::make_shared<BoundMethod>(receiver, name));
}

// markupsafe.Markup wraps the string results of its methods in Markup again.
Value KeepSafe(Value v) {
  if (v.is_string()) return Value::String(v.str(), true);
  if (v.is_seq() && v.is_indexable_seq()) {
    std::vector<Value> items;
    for (const Value& item : v.seq().items) items.push_back(KeepSafe(item));
    absl::StatusOr<Value> seq = Value::Seq(std::move(items), v.seq().kind);
    if (seq.ok()) return *seq;
  }
  return v;
}

absl::StatusOr<Value> CallMethod(Interpreter& interp, const Value& receiver,
                                 const std::string& name, CallArgs args) {
  if (receiver.is_string() && receiver.safe() && !absl::StartsWith(name, "is") && name != "find" &&
      name != "rfind" && name != "index" && name != "rindex" && name != "count" &&
      name != "startswith" && name != "endswith") {
    ORCA_ASSIGN_OR_RETURN(Value v, CallStrMethod(interp, receiver.str(), name, std::move(args)));
    return KeepSafe(std::move(v));
  }
  if (receiver.is_string()) return CallStrMethod(interp, receiver.str(), name, std::move(args));
  if (receiver.is_dict()) return CallDictMethod(receiver, name, std::move(args));
  return CallSeqMethod(receiver, name, std::move(args));
}

std::vector<std::pair<std::string, Value>> GlobalFunctions() {
  std::vector<std::pair<std::string, Value>> fns;
  auto add = [&fns](const char* name, Function::Fn fn) {
    fns.emplace_back(name, Value::Obj(std::make_shared<Function>(name, fn)));
  };
  add("range", Range);
  add("dict", MakeDict);
  add("namespace", MakeNamespace);
  add("joiner", MakeJoiner);
  add("raise_exception", RaiseException);
  add("strftime_now", StrftimeNow);
  return fns;
}

}  // namespace orca::chat_internal
