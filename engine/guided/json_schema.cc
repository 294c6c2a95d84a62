#include "engine/guided/json_schema.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/common/status_macros.h"
#include "engine/guided/byte_dfa.h"
#include "engine/guided/grammar_automaton.h"

namespace orca {
namespace {

using json = nlohmann::ordered_json;  // properties keep the schema's order

constexpr char kSep[] = "[ ]?";  // after ':' and ','
constexpr char kChar[] = "(?:[^\"\\\\\\x00-\\x1F]|\\\\[\"\\\\/bfnrt]|\\\\u[0-9a-fA-F]{4})";
// Numbers with at most 16 integer digits, 16 decimals and a 3-digit exponent: every
// double is written so, and a model cannot run on with digits.
constexpr char kNumber[] = "-?(?:0|[1-9][0-9]{0,15})(?:\\.[0-9]{1,16})?(?:[eE][+-]?[0-9]{1,3})?";
constexpr int64_t kMaxBound = 1'000'000'000'000'000LL;  // integer bounds handled exactly
constexpr int kMaxRepeat = 1000;
// The pattern a schema becomes at most (optional properties repeat what follows them).
constexpr size_t kMaxPatternBytes = 256 * 1024;
// Dates that exist in every year: 30-day months end on the 30th, February on the 28th
// (the 29th would need the year's divisibility: never invalid, one day short).
constexpr char kDate[] =
    "[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|"
    "30)"
    "|02-(?:0[1-9]|1[0-9]|2[0-8]))";
constexpr char kTime[] =
    "(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]{1,6})?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-"
    "5][0-9])";

std::string Alt(const std::vector<std::string>& parts) {
  if (parts.size() == 1) return parts[0];
  return "(?:" + absl::StrJoin(parts, "|") + ")";
}

// Fixed-width digit strings a..b (same width, leading zeros allowed).
std::string Digits(const std::string& a, const std::string& b) {
  if (a.empty()) return "";
  if (a == b) return a;
  if (a[0] == b[0]) return std::string(1, a[0]) + Digits(a.substr(1), b.substr(1));
  const size_t w = a.size() - 1;
  const std::string zeros(w, '0'), nines(w, '9');
  const std::string any = w == 0 ? "" : absl::StrCat("[0-9]{", w, "}");
  if (a.substr(1) == zeros && b.substr(1) == nines) {
    return absl::StrCat("[", std::string(1, a[0]), "-", std::string(1, b[0]), "]", any);
  }
  std::vector<std::string> parts;
  parts.push_back(std::string(1, a[0]) + Digits(a.substr(1), nines));
  if (b[0] - a[0] >= 2) {
    parts.push_back(absl::StrCat("[", std::string(1, static_cast<char>(a[0] + 1)), "-",
                                 std::string(1, static_cast<char>(b[0] - 1)), "]", any));
  }
  parts.push_back(std::string(1, b[0]) + Digits(zeros, b.substr(1)));
  return Alt(parts);
}

// Non-negative integers lo..hi (hi < 0: unbounded), as written in JSON.
std::string NonNegative(int64_t lo, int64_t hi) {
  const std::string a = std::to_string(lo);
  if (hi < 0) {  // lo.. : the rest of lo's width, then every longer number
    const std::string same = Digits(a, std::string(a.size(), '9'));
    // (At most 18 digits: the int64 range, and no endless digits.)
    if (a.size() >= 18) return same;
    return Alt({same, absl::StrCat("[1-9][0-9]{", a.size(), ",17}")});
  }
  const std::string b = std::to_string(hi);
  if (a.size() == b.size()) return Digits(a, b);
  std::vector<std::string> parts = {Digits(a, std::string(a.size(), '9'))};
  for (size_t w = a.size() + 1; w < b.size(); ++w) {
    parts.push_back(absl::StrCat("[1-9][0-9]{", w - 1, "}"));
  }
  parts.push_back(Digits("1" + std::string(b.size() - 1, '0'), b));
  return Alt(parts);
}

// Integers in [lo, hi]; a missing bound is unbounded.
std::string IntegerRange(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  std::vector<std::string> parts;
  // Negative part: -(|x|) for x in [lo, min(hi, -1)].
  if (!lo || *lo < 0) {
    const int64_t top = hi ? std::min<int64_t>(*hi, -1) : -1;  // closest to zero
    if (!lo || *lo <= top) parts.push_back("-" + NonNegative(-top, lo ? -*lo : -1));
  }
  if (!hi || *hi >= 0)
    parts.push_back(NonNegative(lo ? std::max<int64_t>(*lo, 0) : 0, hi ? *hi : -1));
  return Alt(parts);
}

// Any JSON value, and any JSON object, nested at most `depth` deep (`depth` >= 1).
struct NestedJson {
  std::string value, object;
};
NestedJson Nested(int depth) {
  const std::string str = absl::StrCat("\"", kChar, "*\"");
  NestedJson out{Alt({str, kNumber, "true", "false", "null"}), ""};
  for (int d = 0; d < depth; ++d) {
    const std::string& v = out.value;
    const std::string arr = absl::StrCat("\\[(?:", v, "(?:,", kSep, v, ")*)?\\]");
    const std::string member = absl::StrCat(str, ":", kSep, v);
    out.object = absl::StrCat("\\{(?:", member, "(?:,", kSep, member, ")*)?\\}");
    out.value = Alt({str, kNumber, "true", "false", "null", arr, out.object});
  }
  return out;
}

const std::set<std::string>& KnownKeywords() {
  static const auto* k = new std::set<std::string>{"type",
                                                   "enum",
                                                   "const",
                                                   "properties",
                                                   "required",
                                                   "additionalProperties",
                                                   "items",
                                                   "minItems",
                                                   "maxItems",
                                                   "anyOf",
                                                   "oneOf",
                                                   "allOf",
                                                   "$ref",
                                                   "$defs",
                                                   "definitions",
                                                   "minLength",
                                                   "maxLength",
                                                   "pattern",
                                                   "format",
                                                   "minimum",
                                                   "maximum",
                                                   "exclusiveMinimum",
                                                   "exclusiveMaximum",
                                                   "title",
                                                   "description",
                                                   "$schema",
                                                   "$id",
                                                   "default",
                                                   "examples",
                                                   "$comment"};
  return *k;
}

class Converter {
 public:
  // `$ref: "#"` (the whole schema) is always a call of the grammar's root.
  explicit Converter(const json& root) : root_(root) { calls_["#"] = "root"; }

  // The pattern of the whole schema.
  absl::StatusOr<std::string> Root() {
    resolving_ = {"#"};
    return Convert(root_, "");
  }
  // Whether the schema recursed: its patterns hold rule calls (?&name).
  bool recursive() const { return recursive_; }

  // The schema as grammar rules: the root's pattern, and one rule per definition the
  // patterns call, each written out until it calls itself.
  absl::StatusOr<GbnfRules> Grammar() {
    GbnfRules rules;
    absl::StatusOr<std::string> root = Root();
    if (!root.ok()) return root.status();
    ORCA_RETURN_IF_ERROR(AddRule(rules, "root", *root));
    // (Converting a definition may call further ones: until none is left.)
    for (bool added = true; added;) {
      added = false;
      const std::map<std::string, std::string> calls = calls_;
      for (const auto& [ref, name] : calls) {
        if (rules.contains(name)) continue;
        resolving_ = {"#", ref};
        absl::StatusOr<std::string> body = Convert(*Target(ref), ref.substr(1));
        if (!body.ok()) return body.status();
        ORCA_RETURN_IF_ERROR(AddRule(rules, name, *body));
        added = true;
      }
    }
    return rules;
  }

  absl::StatusOr<std::string> Convert(const json& s, const std::string& where) {
    if (++depth_ > 32) return Refuse(where, "nesting deeper than 32 levels");
    auto out = ConvertOne(s, where);
    --depth_;
    if (out.ok() && out->size() > kMaxPatternBytes) return TooLarge(where);
    return out;
  }

 private:
  absl::Status TooLarge(const std::string& where) {
    return Refuse(where, absl::StrCat("the schema's pattern passes ", kMaxPatternBytes,
                                      " bytes (too many optional properties or too deep)"));
  }

  absl::Status Refuse(const std::string& where, const std::string& what) {
    return absl::InvalidArgumentError(
        absl::StrCat("json schema at ", where.empty() ? "the root" : where, ": ", what));
  }

  // Refuses a type-specific keyword (maxLength, minimum, items, ...) that applies to
  // none of `types` (none given: the schema has no type), which would otherwise be
  // silently ignored.
  absl::Status CheckKeywordsApply(const json& s, const std::vector<std::string>& types,
                                  const std::string& where) {
    static const auto* owner =
        new std::map<std::string, std::string>{{"minLength", "string"},
                                               {"maxLength", "string"},
                                               {"pattern", "string"},
                                               {"format", "string"},
                                               {"minimum", "number"},
                                               {"maximum", "number"},
                                               {"exclusiveMinimum", "number"},
                                               {"exclusiveMaximum", "number"},
                                               {"properties", "object"},
                                               {"required", "object"},
                                               {"additionalProperties", "object"},
                                               {"items", "array"},
                                               {"minItems", "array"},
                                               {"maxItems", "array"}};
    for (const auto& [k, t] : *owner) {
      if (!s.contains(k)) continue;
      const bool applies =
          std::any_of(types.begin(), types.end(), [&, &t = t](const std::string& x) {
            return x == t || (t == "number" && x == "integer");
          });
      if (!applies) {
        return Refuse(where, absl::StrCat("'", k, "' applies to ", t, "s, not to ",
                                          types.empty() ? "a schema without a 'type'"
                                                        : absl::StrJoin(types, " or ")));
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> ConvertOne(const json& s, const std::string& where,
                                         bool check_keywords = true) {
    if (s.is_boolean()) {
      if (s.get<bool>()) return AnyValue(2);
      return Refuse(where, "the schema `false` matches nothing");
    }
    if (!s.is_object()) return Refuse(where, "a schema must be an object");
    for (const auto& [k, v] : s.items()) {
      if (!KnownKeywords().contains(k)) {
        return Refuse(where, absl::StrCat("the keyword '", k, "' is not supported"));
      }
    }
    // Beside $ref, const, enum or a combinator without a type, a type-specific keyword
    // would be ignored: refused like anywhere else it applies to nothing.
    const bool combined = s.contains("$ref") || s.contains("const") || s.contains("enum") ||
                          s.contains("anyOf") || s.contains("oneOf") || s.contains("allOf");
    if (combined && check_keywords && !s.contains("type")) {
      ORCA_RETURN_IF_ERROR(CheckKeywordsApply(s, {}, where));
    }
    if (s.contains("$ref")) return Ref(s["$ref"], where);
    if (s.contains("const")) return Literal(s["const"]);
    if (s.contains("enum")) {
      if (!s["enum"].is_array() || s["enum"].empty())
        return Refuse(where, "'enum' must be a non-empty array");
      std::vector<std::string> parts;
      for (const json& v : s["enum"]) parts.push_back(Literal(v));
      return Alt(parts);
    }
    for (const char* combo : {"anyOf", "oneOf"}) {
      if (!s.contains(combo)) continue;
      if (!s[combo].is_array() || s[combo].empty()) {
        return Refuse(where, absl::StrCat("'", combo, "' must be a non-empty array"));
      }
      std::vector<std::string> parts;
      for (size_t i = 0; i < s[combo].size(); ++i) {
        auto p = Convert(s[combo][i], absl::StrCat(where, "/", combo, "/", i));
        if (!p.ok()) return p;
        parts.push_back(*p);
      }
      return Alt(parts);
    }
    if (s.contains("allOf")) {
      if (!s["allOf"].is_array() || s["allOf"].size() != 1) {
        return Refuse(where, "'allOf' with more than one schema is not supported");
      }
      return Convert(s["allOf"][0], where + "/allOf/0");
    }
    if (!s.contains("type")) {
      if (check_keywords) ORCA_RETURN_IF_ERROR(CheckKeywordsApply(s, {}, where));
      return AnyValue(2);
    }
    const json& type = s["type"];
    if (type.is_array()) {
      std::vector<std::string> names;
      for (const json& t : type) {
        if (!t.is_string()) return Refuse(where, "'type' must hold strings");
        names.push_back(t.get<std::string>());
      }
      if (names.empty()) return Refuse(where, "'type' must not be empty");
      ORCA_RETURN_IF_ERROR(CheckKeywordsApply(s, names, where));
      std::vector<std::string> parts;
      for (const std::string& t : names) {
        json one = s;
        one["type"] = t;
        auto p = ConvertOne(one, where, /*check_keywords=*/false);
        if (!p.ok()) return p;
        parts.push_back(*p);
      }
      return Alt(parts);
    }
    if (!type.is_string()) return Refuse(where, "'type' must be a string or an array of them");
    const std::string t = type.get<std::string>();
    if (check_keywords) ORCA_RETURN_IF_ERROR(CheckKeywordsApply(s, {t}, where));
    if (t == "string") return String(s, where);
    if (t == "integer") return Integer(s, where);
    if (t == "number") {
      for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
        if (s.contains(k))
          return Refuse(where, absl::StrCat("'", k, "' on a number is not supported"));
      }
      return std::string(kNumber);
    }
    if (t == "boolean") return std::string("(?:true|false)");
    if (t == "null") return std::string("null");
    if (t == "object") return Object(s, where);
    if (t == "array") return Array(s, where);
    return Refuse(where, absl::StrCat("unknown type '", t, "'"));
  }

  // The schema `ref` names ("#", "#/$defs/x", "#/definitions/x"); null when none.
  const json* Target(const std::string& ref) const {
    if (ref == "#") return &root_;
    for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
      if (!ref.starts_with(prefix)) continue;
      const std::string name = ref.substr(std::string_view(prefix).size());
      const char* section = prefix[2] == '$' ? "$defs" : "definitions";
      if (!root_.contains(section) || !root_[section].is_object() ||
          !root_[section].contains(name)) {
        return nullptr;
      }
      return &root_[section][name];
    }
    return nullptr;
  }

  // A definition is written out where it is used; where it is used inside itself
  // (recursion), it becomes a call of its own grammar rule.
  absl::StatusOr<std::string> Ref(const json& ref, const std::string& where) {
    if (!ref.is_string()) return Refuse(where, "'$ref' must be a string");
    const std::string r = ref.get<std::string>();
    const json* target = Target(r);
    if (target == nullptr) {
      if (r == "#" || r.starts_with("#/$defs/") || r.starts_with("#/definitions/")) {
        return Refuse(where, absl::StrCat("'$ref' ", r, " names no definition"));
      }
      return Refuse(where, absl::StrCat("'$ref' ", r,
                                        " (only #, #/$defs/... and "
                                        "#/definitions/...)"));
    }
    if (!resolving_.insert(r).second) {
      recursive_ = true;
      auto [it, added] = calls_.try_emplace(r, absl::StrCat("ref", calls_.size()));
      return absl::StrCat("(?&", it->second, ")");
    }
    auto out = Convert(*target, r.substr(1));
    resolving_.erase(r);
    return out;
  }

  absl::Status AddRule(GbnfRules& rules, const std::string& name, const std::string& pattern) {
    absl::StatusOr<GbnfNode> body = RegexToGbnf(pattern);
    if (!body.ok()) return body.status();
    rules.emplace(name, *std::move(body));
    return absl::OkStatus();
  }

  static std::string Literal(const json& v) { return RegexLiteral(v.dump()); }

  // A non-negative integer keyword, or `absent` when the schema has none.
  absl::StatusOr<int64_t> Count(const json& s, const char* k, int64_t absent,
                                const std::string& where) {
    if (!s.contains(k)) return absent;
    const json& v = s[k];
    if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0)) {
      return Refuse(where, absl::StrCat("'", k, "' must be a non-negative integer"));
    }
    return static_cast<int64_t>(std::min<uint64_t>(v.get<uint64_t>(), uint64_t{1} << 40));
  }

  absl::StatusOr<std::string> String(const json& s, const std::string& where) {
    std::string body;
    if (s.contains("format")) {
      static const std::map<std::string, std::string> formats = {
          {"date", kDate},
          {"time", kTime},
          {"date-time", absl::StrCat(kDate, "T", kTime)},
          {"uuid", "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"},
          {"email",
           "[a-zA-Z0-9._%+-]{1,64}@[a-zA-Z0-9-]{1,63}(?:\\.[a-zA-Z0-9-]{1,63}){0,4}\\.[a-zA-Z]{2,"
           "8}"},
          {"ipv4",
           "(?:(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}"
           "|[1-9]?[0-9])"},
      };
      if (!s["format"].is_string() || !formats.contains(s["format"].get<std::string>())) {
        return Refuse(where,
                      absl::StrCat("the string format ", s["format"].dump(), " is not supported"));
      }
      if (s.contains("pattern") || s.contains("minLength") || s.contains("maxLength")) {
        return Refuse(where, "'format' together with 'pattern' or lengths is not supported");
      }
      return "\"" + formats.at(s["format"].get<std::string>()) + "\"";
    }
    if (s.contains("pattern")) {
      if (!s["pattern"].is_string()) return Refuse(where, "'pattern' must be a string");
      std::string p = s["pattern"].get<std::string>();
      if (p.starts_with("^")) p.erase(0, 1);
      if (p.ends_with("$") && !p.ends_with("\\$")) p.pop_back();
      // The pattern describes the string's characters; those JSON must escape (quote,
      // backslash, controls) would need escaping the pattern cannot express.
      auto dfa = ByteDfa::Compile(p);
      if (!dfa.ok()) return Refuse(where + "/pattern", std::string(dfa.status().message()));
      for (int32_t st = 0; st < dfa->num_states(); ++st) {
        for (int b : {'"', '\\'}) {
          if (dfa->Next(st, static_cast<uint8_t>(b)) != ByteDfa::kDead) {
            return Refuse(where + "/pattern",
                          "a pattern that can match '\"' or '\\' is not supported");
          }
        }
        for (int b = 0; b < 0x20; ++b) {
          if (dfa->Next(st, static_cast<uint8_t>(b)) != ByteDfa::kDead) {
            return Refuse(where + "/pattern",
                          "a pattern that can match a control character is not supported");
          }
        }
      }
      if (s.contains("minLength") || s.contains("maxLength")) {
        return Refuse(where, "'pattern' together with 'minLength'/'maxLength' is not supported");
      }
      return "\"(?:" + p + ")\"";
    }
    auto min = Count(s, "minLength", 0, where);
    auto max_or = Count(s, "maxLength", -1, where);
    if (!min.ok()) return min.status();
    if (!max_or.ok()) return max_or.status();
    const int64_t max = *max_or;
    if (*min > kMaxRepeat || (max >= 0 && max < *min)) {
      return Refuse(where, "'minLength'/'maxLength' out of range");
    }
    if (max < 0 || max > kMaxRepeat) return absl::StrCat("\"", kChar, "{", *min, ",}\"");
    return absl::StrCat("\"", kChar, "{", *min, ",", max, "}\"");
  }

  absl::StatusOr<std::string> Integer(const json& s, const std::string& where) {
    std::optional<int64_t> lo, hi;
    auto bound = [&](const char* k, bool lower, bool exclusive) -> absl::Status {
      if (!s.contains(k)) return absl::OkStatus();
      if (!s[k].is_number()) return Refuse(where, absl::StrCat("'", k, "' must be a number"));
      const double v = s[k].get<double>();
      if (!std::isfinite(v) || std::abs(v) > static_cast<double>(kMaxBound)) {
        return Refuse(where, absl::StrCat("'", k, "' beyond 1e18 is not supported"));
      }
      int64_t b = static_cast<int64_t>(lower ? std::ceil(v) : std::floor(v));
      if (exclusive && static_cast<double>(b) == v) b += lower ? 1 : -1;
      if (lower) {
        lo = lo ? std::max(*lo, b) : b;
      } else {
        hi = hi ? std::min(*hi, b) : b;
      }
      return absl::OkStatus();
    };
    for (auto st : {bound("minimum", true, false), bound("exclusiveMinimum", true, true),
                    bound("maximum", false, false), bound("exclusiveMaximum", false, true)}) {
      if (!st.ok()) return st;
    }
    if (lo && hi && *lo > *hi) return Refuse(where, "no integer lies between its bounds");
    return IntegerRange(lo, hi);
  }

  absl::StatusOr<std::string> Object(const json& s, const std::string& where) {
    if (s.contains("additionalProperties") && s["additionalProperties"] != false) {
      return Refuse(where, "'additionalProperties' other than false is not supported");
    }
    std::set<std::string> required;
    if (s.contains("required")) {
      for (const json& r : s["required"]) {
        if (!r.is_string()) return Refuse(where, "'required' must hold strings");
        required.insert(r.get<std::string>());
      }
    }
    struct Prop {
      std::string item;  // "key": value
      bool required;
    };
    std::vector<Prop> props;
    if (s.contains("properties")) {
      if (!s["properties"].is_object()) return Refuse(where, "'properties' must be an object");
      for (const auto& [k, v] : s["properties"].items()) {
        auto value = Convert(v, absl::StrCat(where, "/properties/", k));
        if (!value.ok()) return value;
        props.push_back({RegexLiteral(json(k).dump()) + ":" + kSep + *value, required.contains(k)});
        required.erase(k);
      }
    }
    if (!required.empty()) {
      return Refuse(where, absl::StrCat("required property '", *required.begin(),
                                        "' is not in 'properties'"));
    }
    // The properties in order, optional ones omitted or not: which one comes first
    // decides where commas go.
    std::vector<std::string> firsts;
    size_t total = 0;
    for (size_t i = 0; i < props.size(); ++i) {
      std::string seq = props[i].item;
      for (size_t j = i + 1; j < props.size(); ++j) {
        const std::string more = absl::StrCat(",", kSep, props[j].item);
        seq += props[j].required ? more : "(?:" + more + ")?";
        if (seq.size() > kMaxPatternBytes) return TooLarge(where);
      }
      total += seq.size();
      if (total > kMaxPatternBytes) return TooLarge(where);
      firsts.push_back(seq);
      if (props[i].required) break;  // nothing after a required one can come first
    }
    const bool all_optional =
        std::none_of(props.begin(), props.end(), [](const Prop& p) { return p.required; });
    std::string inner = firsts.empty() ? "" : Alt(firsts);
    if (all_optional && !inner.empty()) inner = "(?:" + inner + ")?";
    return "\\{" + inner + "\\}";
  }

  absl::StatusOr<std::string> Array(const json& s, const std::string& where) {
    std::string item = AnyValue(2);
    if (s.contains("items")) {
      auto i = Convert(s["items"], where + "/items");
      if (!i.ok()) return i;
      item = *i;
    }
    auto min_or = Count(s, "minItems", 0, where);
    auto max_or = Count(s, "maxItems", -1, where);
    if (!min_or.ok()) return min_or.status();
    if (!max_or.ok()) return max_or.status();
    const int64_t min = *min_or;
    int64_t max = *max_or;
    if (min > kMaxRepeat || (max >= 0 && max < min)) {
      return Refuse(where, "'minItems'/'maxItems' out of range");
    }
    if (max > kMaxRepeat) max = -1;
    if (max == 0) return std::string("\\[\\]");
    const std::string more = absl::StrCat("(?:,", kSep, item, ")");
    const std::string rest =
        max < 0 ? absl::StrCat(more, "{", std::max<int64_t>(min - 1, 0), ",}")
                : absl::StrCat(more, "{", std::max<int64_t>(min - 1, 0), ",", max - 1, "}");
    const std::string list = item + rest;
    return min == 0 ? "\\[(?:" + list + ")?\\]" : "\\[" + list + "\\]";
  }

  static std::string AnyValue(int depth) { return Nested(depth).value; }

  const json& root_;
  std::set<std::string> resolving_;           // the $refs being written out
  std::map<std::string, std::string> calls_;  // $ref -> its rule
  bool recursive_ = false;
  int depth_ = 0;
};

}  // namespace

absl::StatusOr<GuideSpec> JsonSchemaToGuide(const nlohmann::ordered_json& schema) {
  Converter c(schema);
  absl::StatusOr<std::string> pattern = c.Root();
  if (!pattern.ok()) return pattern.status();
  if (!c.recursive()) return GuideSpec{*std::move(pattern), GuideSyntax::kRegex};
  // Compiled here too (cheap: states are made as they are reached), so that a schema
  // with no finite instance is a 400 before anything starts.
  absl::StatusOr<GbnfRules> rules = JsonSchemaToGrammar(schema);
  if (!rules.ok()) return rules.status();
  absl::StatusOr<std::unique_ptr<const GrammarAutomaton>> g = GrammarAutomaton::Compile(*rules);
  if (!g.ok())
    return absl::InvalidArgumentError(absl::StrCat("json schema: ", g.status().message()));
  // (Converted again when the guide is compiled: TokenGuide::Create.)
  return GuideSpec{schema.dump(), GuideSyntax::kJsonSchema};
}

absl::StatusOr<GbnfRules> JsonSchemaToGrammar(const nlohmann::ordered_json& schema) {
  return Converter(schema).Grammar();
}

std::string JsonObjectGrammar() {
  return R"g(root   ::= object
value  ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ( member ("," " "? member)* )? "}"
member ::= string ":" " "? value
array  ::= "[" ( value ("," " "? value)* )? "]"
string ::= "\"" ( [^"\\\x00-\x1F] | "\\" ["\\/bfnrt] | "\\u" [0-9a-fA-F]{4} )* "\""
number ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?
)g";
}

}  // namespace orca
