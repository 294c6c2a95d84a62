#include "engine/guided/gbnf.h"

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"

namespace orca {
namespace {

constexpr int kMaxNesting = 64;  // groups within groups
constexpr size_t kMaxRules = 1024;
constexpr int kMaxRepeat = 1000;

class Parser {
 public:
  explicit Parser(std::string_view src) : src_(src) {}

  absl::StatusOr<GbnfRules> Grammar() {
    GbnfRules rules;
    while (true) {
      SkipSpace();
      if (pos_ >= src_.size()) break;
      const size_t line = line_, column = Column();
      std::string name = Name();
      if (name.empty()) return Error("a rule name");
      SkipSpace();
      if (src_.substr(pos_, 3) != "::=") return Error("'::=' after the rule name");
      pos_ += 3;
      absl::StatusOr<GbnfNode> body = Alternatives(0);
      if (!body.ok()) return body.status();
      if (rules.contains(name)) {
        return absl::InvalidArgumentError(absl::StrCat("grammar: line ", line, ", column ", column,
                                                       ": rule '", name, "' is defined twice"));
      }
      if (rules.size() >= kMaxRules) {
        return absl::InvalidArgumentError(absl::StrCat("grammar: more than ", kMaxRules, " rules"));
      }
      rules.emplace(std::move(name), *std::move(body));
    }
    return rules;
  }

 private:
  absl::Status Error(const std::string& expected) const {
    std::string found = pos_ < src_.size()
                            ? absl::StrCat("'", std::string(src_.substr(pos_, 1)), "'")
                            : std::string("the end");
    return absl::InvalidArgumentError(absl::StrCat("grammar: line ", line_, ", column ", Column(),
                                                   ": expected ", expected, ", found ", found));
  }
  size_t Column() const { return pos_ - line_start_ + 1; }

  void SkipSpace() {
    while (pos_ < src_.size()) {
      const char c = src_[pos_];
      if (c == '#') {
        while (pos_ < src_.size() && src_[pos_] != '\n') ++pos_;
      } else if (c == '\n') {
        ++pos_;
        ++line_;
        line_start_ = pos_;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        ++pos_;
      } else {
        break;
      }
    }
  }
  static bool NameChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
  }
  std::string Name() {
    const size_t start = pos_;
    while (pos_ < src_.size() && NameChar(src_[pos_])) ++pos_;
    return std::string(src_.substr(start, pos_ - start));
  }
  // Whether a new rule (`name ::=`) starts here.
  bool AtRuleStart() const {
    size_t p = pos_;
    while (p < src_.size() && NameChar(src_[p])) ++p;
    if (p == pos_) return false;
    while (p < src_.size() &&
           (src_[p] == ' ' || src_[p] == '\t' || src_[p] == '\r' || src_[p] == '\n')) {
      ++p;
    }
    return src_.substr(p, 3) == "::=";
  }

  absl::StatusOr<GbnfNode> Alternatives(int depth) {
    if (depth > kMaxNesting) return Error(absl::StrCat("at most ", kMaxNesting, " nested groups"));
    GbnfNode alt(GbnfNode::kAlt);
    while (true) {
      absl::StatusOr<GbnfNode> seq = Sequence(depth);
      if (!seq.ok()) return seq.status();
      alt.kids.push_back(*std::move(seq));
      SkipSpace();
      if (pos_ < src_.size() && src_[pos_] == '|') {
        ++pos_;
        continue;
      }
      return alt;
    }
  }

  absl::StatusOr<GbnfNode> Sequence(int depth) {
    GbnfNode seq(GbnfNode::kSeq);
    while (true) {
      SkipSpace();
      if (pos_ >= src_.size() || src_[pos_] == '|' || src_[pos_] == ')' || AtRuleStart()) {
        return seq;
      }
      absl::StatusOr<GbnfNode> item = Item(depth);
      if (!item.ok()) return item.status();
      absl::StatusOr<GbnfNode> repeated = Postfix(*std::move(item));
      if (!repeated.ok()) return repeated.status();
      seq.kids.push_back(*std::move(repeated));
    }
  }

  absl::StatusOr<GbnfNode> Item(int depth) {
    const char c = src_[pos_];
    if (c == '"') {
      ++pos_;
      GbnfNode lit(GbnfNode::kLiteral);
      while (true) {
        if (pos_ >= src_.size() || src_[pos_] == '\n') return Error("a closing '\"'");
        if (src_[pos_] == '"') break;
        absl::StatusOr<uint32_t> cp = Char();
        if (!cp.ok()) return cp.status();
        lit.text += Utf8(*cp);
      }
      ++pos_;
      return lit;
    }
    if (c == '[') {
      ++pos_;
      GbnfNode cls(GbnfNode::kClass);
      const bool negated = pos_ < src_.size() && src_[pos_] == '^';
      if (negated) ++pos_;
      CodeRanges set;
      while (true) {
        if (pos_ >= src_.size() || src_[pos_] == '\n') return Error("a closing ']'");
        if (src_[pos_] == ']') break;
        absl::StatusOr<uint32_t> lo = Char();
        if (!lo.ok()) return lo.status();
        uint32_t hi = *lo;
        if (pos_ + 1 < src_.size() && src_[pos_] == '-' && src_[pos_ + 1] != ']') {
          ++pos_;
          absl::StatusOr<uint32_t> h = Char();
          if (!h.ok()) return h.status();
          if (*h < *lo) return Error("a range in order (low-high)");
          hi = *h;
        }
        set.emplace_back(*lo, hi);
      }
      ++pos_;
      if (set.empty()) return Error("a character in the class");
      set = Normalize(std::move(set));
      cls.chars = WithoutSurrogates(negated ? Complement(set) : set);
      return cls;
    }
    if (c == '(') {
      ++pos_;
      absl::StatusOr<GbnfNode> inner = Alternatives(depth + 1);
      if (!inner.ok()) return inner.status();
      SkipSpace();
      if (pos_ >= src_.size() || src_[pos_] != ')') return Error("a closing ')'");
      ++pos_;
      return inner;
    }
    if (c == '.') {
      ++pos_;
      GbnfNode any(GbnfNode::kClass);
      any.chars = WithoutSurrogates({{0, kMaxCodePoint}});
      return any;
    }
    if (NameChar(c)) {
      GbnfNode ref(GbnfNode::kRef);
      ref.line = line_;
      ref.column = Column();
      ref.text = Name();
      return ref;
    }
    return Error("a literal, a class, a group, '.' or a rule name");
  }

  absl::StatusOr<GbnfNode> Postfix(GbnfNode item) {
    if (pos_ >= src_.size()) return item;
    const char c = src_[pos_];
    GbnfNode rep(GbnfNode::kRepeat);
    if (c == '*' || c == '+' || c == '?') {
      ++pos_;
      rep.min = c == '+' ? 1 : 0;
      rep.max = c == '?' ? 1 : -1;
    } else if (c == '{') {
      ++pos_;
      absl::StatusOr<int> lo = Number();
      if (!lo.ok()) return lo.status();
      rep.min = rep.max = *lo;
      if (pos_ < src_.size() && src_[pos_] == ',') {
        ++pos_;
        rep.max = -1;
        if (pos_ < src_.size() && src_[pos_] != '}') {
          absl::StatusOr<int> hi = Number();
          if (!hi.ok()) return hi.status();
          if (*hi < *lo) return Error("a maximum not below the minimum");
          rep.max = *hi;
        }
      }
      if (pos_ >= src_.size() || src_[pos_] != '}') return Error("'}'");
      ++pos_;
    } else {
      return item;
    }
    rep.kids.push_back(std::move(item));
    if (pos_ < src_.size() && std::string_view("*+?{").find(src_[pos_]) != std::string_view::npos) {
      return Error("one repetition per item (group it to repeat again)");
    }
    return rep;
  }

  absl::StatusOr<int> Number() {
    int v = 0;
    const size_t start = pos_;
    while (pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '9') {
      v = v * 10 + (src_[pos_++] - '0');
      if (v > kMaxRepeat) return Error(absl::StrCat("a repetition count up to ", kMaxRepeat));
    }
    if (pos_ == start) return Error("a number");
    return v;
  }

  // One character of a literal or class, escapes decoded; UTF-8 taken whole.
  absl::StatusOr<uint32_t> Char() {
    const unsigned char c = static_cast<unsigned char>(src_[pos_]);
    if (c != '\\') {
      int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
      if (len == 0 || pos_ + len > src_.size()) return Error("UTF-8 text");
      uint32_t cp = len == 1 ? c : c & (0x7F >> len);
      for (int i = 1; i < len; ++i) {
        const unsigned char cc = static_cast<unsigned char>(src_[pos_ + i]);
        if ((cc & 0xC0) != 0x80) return Error("UTF-8 text");
        cp = (cp << 6) | (cc & 0x3F);
      }
      pos_ += len;
      return cp;
    }
    if (pos_ + 1 >= src_.size()) return Error("an escape after '\\'");
    const char e = src_[pos_ + 1];
    pos_ += 2;
    switch (e) {
      case 'n':
        return '\n';
      case 'r':
        return '\r';
      case 't':
        return '\t';
      case '\\':
      case '"':
      case '\'':
      case '[':
      case ']':
      case '-':
      case '^':
        return static_cast<uint32_t>(e);
      case 'x':
        return Hex(2);
      case 'u':
        return Hex(4);
      case 'U':
        return Hex(8);
      default:
        pos_ -= 1;
        return Error("an escape (\\n \\r \\t \\\\ \\\" \\' \\[ \\] \\xHH \\uHHHH \\UHHHHHHHH)");
    }
  }
  absl::StatusOr<uint32_t> Hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      if (pos_ >= src_.size()) return Error("hex digits");
      const char h = src_[pos_];
      const int d = h >= '0' && h <= '9'   ? h - '0'
                    : h >= 'a' && h <= 'f' ? h - 'a' + 10
                    : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                           : -1;
      if (d < 0) return Error("hex digits");
      v = v * 16 + static_cast<uint32_t>(d);
      ++pos_;
    }
    if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return Error("a Unicode scalar value");
    return v;
  }

  std::string_view src_;
  size_t pos_ = 0, line_ = 1, line_start_ = 0;
};

absl::Status CheckRefs(const GbnfRules& rules, const GbnfNode& n) {
  if (n.kind == GbnfNode::kRef && !rules.contains(n.text)) {
    return absl::InvalidArgumentError(absl::StrCat("grammar: line ", n.line, ", column ", n.column,
                                                   ": rule '", n.text, "' is not defined"));
  }
  for (const GbnfNode& k : n.kids) ORCA_RETURN_IF_ERROR(CheckRefs(rules, k));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<GbnfRules> ParseGbnf(std::string_view grammar) {
  Parser parser(grammar);
  absl::StatusOr<GbnfRules> rules = parser.Grammar();
  if (!rules.ok()) return rules.status();
  if (!rules->contains("root")) return absl::InvalidArgumentError("grammar: no 'root' rule");
  // Every reference must resolve, reached or not.
  for (const auto& [name, body] : *rules) ORCA_RETURN_IF_ERROR(CheckRefs(*rules, body));
  return rules;
}

}  // namespace orca
