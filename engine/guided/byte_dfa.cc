#include "engine/guided/byte_dfa.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/guided/utf8_ranges.h"

namespace orca {
namespace {

constexpr int32_t kMaxRepeat = 1000;
constexpr size_t kMaxNfaStates = 50000;
// Subset construction's work (NFA states visited) at most: a pattern is compiled on a
// request thread, so its cost is bounded whatever a client sends (~0.1 s).
constexpr int64_t kMaxWork = 20'000'000;

// The syntax tree of a pattern.
struct Node {
  enum class Kind { kEmpty, kClass, kConcat, kAlt, kRepeat, kCall } kind = Kind::kEmpty;
  CodeRanges chars;                          // kClass
  std::string name;                          // kCall: the rule
  std::vector<std::unique_ptr<Node>> parts;  // kConcat, kAlt; kRepeat: one
  int32_t min = 0, max = 0;                  // kRepeat; max -1: unbounded
};

std::unique_ptr<Node> ClassNode(CodeRanges r) {
  auto n = std::make_unique<Node>();
  n->kind = Node::Kind::kClass;
  n->chars = WithoutSurrogates(Normalize(std::move(r)));
  return n;
}

const CodeRanges kDigit = {{'0', '9'}};
const CodeRanges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const CodeRanges kSpace = {{'\t', '\r'}, {' ', ' '}};

class Parser {
 public:
  // `calls`: rule calls (?&name) are read (RegexToGbnf), else refused.
  explicit Parser(std::string_view p, bool calls = false) : p_(p), calls_(calls) {}

  absl::StatusOr<std::unique_ptr<Node>> Parse() {
    if (Peek('^')) ++pos_;
    auto root = ParseAlt();
    if (!root.ok()) return root;
    if (pos_ < p_.size()) return Error(p_[pos_] == ')' ? "unbalanced ')'" : "unexpected character");
    return root;
  }

 private:
  bool Peek(char c) const { return pos_ < p_.size() && p_[pos_] == c; }
  absl::Status Error(std::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(
        "regular expression: ", absl::string_view(what.data(), what.size()), " at offset ", pos_));
  }

  absl::StatusOr<std::unique_ptr<Node>> ParseAlt() {
    auto alt = std::make_unique<Node>();
    alt->kind = Node::Kind::kAlt;
    while (true) {
      auto part = ParseConcat();
      if (!part.ok()) return part;
      alt->parts.push_back(*std::move(part));
      if (!Peek('|')) break;
      ++pos_;
    }
    if (alt->parts.size() == 1) return std::move(alt->parts[0]);
    return alt;
  }

  absl::StatusOr<std::unique_ptr<Node>> ParseConcat() {
    auto cat = std::make_unique<Node>();
    cat->kind = Node::Kind::kConcat;
    while (pos_ < p_.size() && !Peek('|') && !Peek(')')) {
      if (Peek('$') && pos_ + 1 == p_.size()) {  // the end anchor: the match is whole anyway
        ++pos_;
        break;
      }
      auto atom = ParseRepeat();
      if (!atom.ok()) return atom;
      cat->parts.push_back(*std::move(atom));
    }
    return cat;
  }

  absl::StatusOr<std::unique_ptr<Node>> ParseRepeat() {
    auto atom = ParseAtom();
    if (!atom.ok()) return atom;
    std::unique_ptr<Node> node = *std::move(atom);
    while (pos_ < p_.size()) {
      int32_t min = 0, max = 0;
      const char c = p_[pos_];
      if (c == '*') {
        min = 0, max = -1;
        ++pos_;
      } else if (c == '+') {
        min = 1, max = -1;
        ++pos_;
      } else if (c == '?') {
        min = 0, max = 1;
        ++pos_;
      } else if (c == '{' && IsCount()) {
        ++pos_;
        min = ReadInt();
        max = min;
        if (Peek(',')) {
          ++pos_;
          max = Peek('}') ? -1 : ReadInt();
        }
        ++pos_;  // '}'
        if (min > kMaxRepeat || max > kMaxRepeat) {
          return Error(absl::StrCat("a repetition count over ", kMaxRepeat));
        }
        if (max != -1 && max < min) return Error("a repetition {n,m} with m < n");
      } else {
        break;
      }
      if (Peek('?')) ++pos_;  // lazy: the same language
      if (Peek('+')) return Error("possessive quantifiers are not supported");
      auto rep = std::make_unique<Node>();
      rep->kind = Node::Kind::kRepeat;
      rep->min = min;
      rep->max = max;
      rep->parts.push_back(std::move(node));
      node = std::move(rep);
    }
    return node;
  }

  // Whether a '{' at pos_ starts a count ({n}, {n,}, {n,m}); otherwise it is a literal.
  bool IsCount() const {
    size_t i = pos_ + 1, digits = 0;
    while (i < p_.size() && isdigit(static_cast<unsigned char>(p_[i]))) ++i, ++digits;
    if (digits == 0) return false;
    if (i < p_.size() && p_[i] == ',') {
      ++i;
      while (i < p_.size() && isdigit(static_cast<unsigned char>(p_[i]))) ++i;
    }
    return i < p_.size() && p_[i] == '}';
  }
  int32_t ReadInt() {
    int64_t v = 0;
    while (pos_ < p_.size() && isdigit(static_cast<unsigned char>(p_[pos_]))) {
      v = std::min<int64_t>(v * 10 + (p_[pos_++] - '0'), int64_t{1} << 30);
    }
    return static_cast<int32_t>(v);
  }

  // Reads one UTF-8 code point of the pattern.
  absl::StatusOr<uint32_t> ReadCodePoint() {
    const auto b0 = static_cast<unsigned char>(p_[pos_]);
    const size_t n = b0 < 0x80 ? 1 : b0 >= 0xF0 ? 4 : b0 >= 0xE0 ? 3 : b0 >= 0xC0 ? 2 : 0;
    if (n == 0 || pos_ + n > p_.size()) return Error("the pattern is not UTF-8");
    uint32_t cp = n == 1 ? b0 : b0 & (0x3F >> (n - 1));
    for (size_t i = 1; i < n; ++i) {
      const auto b = static_cast<unsigned char>(p_[pos_ + i]);
      if ((b & 0xC0) != 0x80) return Error("the pattern is not UTF-8");
      cp = (cp << 6) | (b & 0x3F);
    }
    pos_ += n;
    return cp;
  }

  absl::StatusOr<uint32_t> ReadHex(size_t digits) {
    if (pos_ + digits > p_.size()) return Error("a short hexadecimal escape");
    uint32_t v = 0;
    for (size_t i = 0; i < digits; ++i) {
      const char c = p_[pos_++];
      const int d = isdigit(static_cast<unsigned char>(c)) ? c - '0'
                    : (c >= 'a' && c <= 'f')               ? c - 'a' + 10
                    : (c >= 'A' && c <= 'F')               ? c - 'A' + 10
                                                           : -1;
      if (d < 0) return Error("a bad hexadecimal escape");
      v = v * 16 + static_cast<uint32_t>(d);
    }
    return v;
  }

  // Parses the escape after a backslash (pos_ past it) into a set of code points.
  absl::StatusOr<CodeRanges> ParseEscape(bool in_class) {
    if (pos_ >= p_.size()) return Error("a trailing backslash");
    const char c = p_[pos_++];
    switch (c) {
      case 'd':
        return kDigit;
      case 'D':
        return Complement(kDigit);
      case 'w':
        return kWord;
      case 'W':
        return Complement(kWord);
      case 's':
        return kSpace;
      case 'S':
        return Complement(kSpace);
      case 't':
        return CodeRanges{{'\t', '\t'}};
      case 'n':
        return CodeRanges{{'\n', '\n'}};
      case 'r':
        return CodeRanges{{'\r', '\r'}};
      case 'f':
        return CodeRanges{{'\f', '\f'}};
      case 'v':
        return CodeRanges{{'\v', '\v'}};
      case '0':
        return CodeRanges{{0, 0}};
      case 'x': {
        auto v = ReadHex(2);
        if (!v.ok()) return v.status();
        return CodeRanges{{*v, *v}};
      }
      case 'u': {
        auto v = ReadHex(4);
        if (!v.ok()) return v.status();
        return CodeRanges{{*v, *v}};
      }
      case 'b':
        if (in_class) return CodeRanges{{'\b', '\b'}};
        return Error("word boundaries (\\b) are not supported");
      default:
        if (isalnum(static_cast<unsigned char>(c))) {
          --pos_;
          return Error(absl::StrCat("the escape \\", std::string(1, c),
                                    " (backreferences, \\B, \\A, \\Z, classes "
                                    "by property) is not supported"));
        }
        return CodeRanges{{static_cast<unsigned char>(c), static_cast<unsigned char>(c)}};
    }
  }

  absl::StatusOr<std::unique_ptr<Node>> ParseClass() {
    ++pos_;  // '['
    bool negated = false;
    if (Peek('^')) {
      negated = true;
      ++pos_;
    }
    CodeRanges set;
    bool first = true;
    while (true) {
      if (pos_ >= p_.size()) return Error("an unterminated character class");
      if (Peek(']') && !first) {
        ++pos_;
        break;
      }
      first = false;
      if (p_.substr(pos_).starts_with("[:"))
        return Error("POSIX classes ([:alpha:]) are not supported");
      CodeRanges item;
      if (Peek('\\')) {
        ++pos_;
        auto e = ParseEscape(/*in_class=*/true);
        if (!e.ok()) return e.status();
        item = *std::move(e);
      } else {
        auto cp = ReadCodePoint();
        if (!cp.ok()) return cp.status();
        item = {{*cp, *cp}};
      }
      // A range a-z (a '-' before ']' is literal).
      if (item.size() == 1 && item[0].first == item[0].second && Peek('-') &&
          pos_ + 1 < p_.size() && p_[pos_ + 1] != ']') {
        ++pos_;
        uint32_t hi;
        if (Peek('\\')) {
          ++pos_;
          auto e = ParseEscape(/*in_class=*/true);
          if (!e.ok()) return e.status();
          if (e->size() != 1 || (*e)[0].first != (*e)[0].second) {
            return Error("a class range ending in a class escape");
          }
          hi = (*e)[0].first;
        } else {
          auto cp = ReadCodePoint();
          if (!cp.ok()) return cp.status();
          hi = *cp;
        }
        if (hi < item[0].first) return Error("a class range out of order");
        item[0].second = hi;
      }
      set.insert(set.end(), item.begin(), item.end());
    }
    set = Normalize(std::move(set));
    return ClassNode(negated ? Complement(set) : set);
  }

  absl::StatusOr<std::unique_ptr<Node>> ParseAtom() {
    const char c = p_[pos_];
    switch (c) {
      case '(': {
        ++pos_;
        if (Peek('?')) {
          if (p_.substr(pos_).starts_with("?:")) {
            pos_ += 2;
          } else if (calls_ && p_.substr(pos_).starts_with("?&")) {
            return ParseCall();
          } else {
            return Error("lookaround, named groups and inline flags ((?...)) are not supported");
          }
        }
        auto inner = ParseAlt();
        if (!inner.ok()) return inner;
        if (!Peek(')')) return Error("an unterminated group");
        ++pos_;
        return inner;
      }
      case '[':
        return ParseClass();
      case '.':
        ++pos_;
        return ClassNode(Complement({{'\n', '\n'}}));
      case '\\': {
        ++pos_;
        auto e = ParseEscape(/*in_class=*/false);
        if (!e.ok()) return e.status();
        return ClassNode(*std::move(e));
      }
      case '*':
      case '+':
      case '?':
        return Error("a quantifier with nothing to repeat");
      case '^':
        return Error("'^' inside the pattern (the whole output is matched)");
      case '$':
        return Error("'$' inside the pattern (the whole output is matched)");
      default: {
        auto cp = ReadCodePoint();
        if (!cp.ok()) return cp.status();
        return ClassNode({{*cp, *cp}});
      }
    }
  }

  // A rule call: (?&name) with pos_ at the '?'.
  absl::StatusOr<std::unique_ptr<Node>> ParseCall() {
    pos_ += 2;
    const size_t start = pos_;
    while (pos_ < p_.size() &&
           (isalnum(static_cast<unsigned char>(p_[pos_])) || p_[pos_] == '_' || p_[pos_] == '-')) {
      ++pos_;
    }
    if (pos_ == start || !Peek(')')) return Error("a rule name and ')' after '(?&'");
    auto call = std::make_unique<Node>();
    call->kind = Node::Kind::kCall;
    call->name = std::string(p_.substr(start, pos_ - start));
    ++pos_;
    return call;
  }

  std::string_view p_;
  const bool calls_;
  size_t pos_ = 0;
};

GbnfNode ToGbnf(const Node& n) {
  switch (n.kind) {
    case Node::Kind::kEmpty:
      return GbnfNode(GbnfNode::kLiteral);
    case Node::Kind::kClass: {
      GbnfNode c(GbnfNode::kClass);
      c.chars = n.chars;
      return c;
    }
    case Node::Kind::kCall:
      return GbnfNode(GbnfNode::kRef, n.name);
    case Node::Kind::kConcat:
    case Node::Kind::kAlt:
    case Node::Kind::kRepeat:
      break;
  }
  GbnfNode out(n.kind == Node::Kind::kConcat ? GbnfNode::kSeq
               : n.kind == Node::Kind::kAlt  ? GbnfNode::kAlt
                                             : GbnfNode::kRepeat);
  out.min = n.min;
  out.max = n.max;
  for (const auto& part : n.parts) out.kids.push_back(ToGbnf(*part));
  return out;
}

// A Thompson automaton over bytes.
class Nfa {
 public:
  struct State {
    std::vector<std::pair<std::pair<uint8_t, uint8_t>, int32_t>> edges;  // byte range -> state
    std::vector<int32_t> eps;
  };

  int32_t New() {
    states_.emplace_back();
    return static_cast<int32_t>(states_.size()) - 1;
  }
  std::vector<State>& states() { return states_; }

  // Builds `n` between fresh states; returns {start, end}.
  absl::StatusOr<std::pair<int32_t, int32_t>> Build(const Node& n) {
    if (states_.size() > kMaxNfaStates) {
      return absl::InvalidArgumentError("regular expression: the pattern is too large");
    }
    const int32_t s = New(), e = New();
    switch (n.kind) {
      case Node::Kind::kCall:
        return absl::InvalidArgumentError("regular expression: a rule call outside a grammar");
      case Node::Kind::kEmpty:
        states_[s].eps.push_back(e);
        break;
      case Node::Kind::kClass: {
        std::vector<ByteRanges> seqs;
        for (const auto& [lo, hi] : n.chars) Utf8Sequences(lo, hi, seqs);
        for (const ByteRanges& seq : seqs) {
          int32_t at = s;
          for (size_t i = 0; i < seq.size(); ++i) {
            const int32_t to = i + 1 == seq.size() ? e : New();
            states_[at].edges.push_back({seq[i], to});
            at = to;
          }
        }
        break;
      }
      case Node::Kind::kConcat: {
        int32_t at = s;
        for (const auto& part : n.parts) {
          auto f = Build(*part);
          if (!f.ok()) return f;
          states_[at].eps.push_back(f->first);
          at = f->second;
        }
        states_[at].eps.push_back(e);
        break;
      }
      case Node::Kind::kAlt:
        for (const auto& part : n.parts) {
          auto f = Build(*part);
          if (!f.ok()) return f;
          states_[s].eps.push_back(f->first);
          states_[f->second].eps.push_back(e);
        }
        break;
      case Node::Kind::kRepeat: {
        int32_t at = s;
        for (int32_t i = 0; i < n.min; ++i) {
          auto f = Build(*n.parts[0]);
          if (!f.ok()) return f;
          states_[at].eps.push_back(f->first);
          at = f->second;
        }
        if (n.max == -1) {
          auto f = Build(*n.parts[0]);
          if (!f.ok()) return f;
          states_[at].eps.push_back(f->first);
          states_[f->second].eps.push_back(at);
        } else {
          for (int32_t i = n.min; i < n.max; ++i) {
            auto f = Build(*n.parts[0]);
            if (!f.ok()) return f;
            states_[at].eps.push_back(f->first);
            states_[at].eps.push_back(e);
            at = f->second;
          }
        }
        states_[at].eps.push_back(e);
        break;
      }
    }
    return std::make_pair(s, e);
  }

  // The sorted epsilon closure of `set`; adds the states it visits to `work`.
  std::vector<int32_t> Closure(std::vector<int32_t> set, int64_t& work) {
    // Visited marks by stamp: no clearing (or allocation) per call.
    seen_.resize(states_.size(), 0);
    ++stamp_;
    std::vector<int32_t> stack = set;
    set.clear();
    while (!stack.empty()) {
      const int32_t s = stack.back();
      stack.pop_back();
      if (seen_[s] == stamp_) continue;
      seen_[s] = stamp_;
      ++work;
      set.push_back(s);
      for (int32_t t : states_[s].eps) stack.push_back(t);
    }
    std::sort(set.begin(), set.end());
    return set;
  }

 private:
  std::vector<State> states_;
  std::vector<uint32_t> seen_;
  uint32_t stamp_ = 0;
};

}  // namespace

absl::StatusOr<ByteDfa> ByteDfa::Compile(std::string_view pattern) {
  auto tree = Parser(pattern).Parse();
  if (!tree.ok()) return tree.status();
  Nfa nfa;
  auto frag = nfa.Build(**tree);
  if (!frag.ok()) return frag.status();
  const int32_t accept = frag->second;

  // Subset construction.
  std::map<std::vector<int32_t>, int32_t> ids;
  std::vector<std::vector<int32_t>> sets;
  std::vector<int32_t> next;
  std::vector<bool> accepting;
  auto intern = [&](std::vector<int32_t> set) {
    auto [it, fresh] = ids.try_emplace(set, static_cast<int32_t>(sets.size()));
    if (fresh) {
      accepting.push_back(std::binary_search(set.begin(), set.end(), accept));
      sets.push_back(std::move(set));
    }
    return it->second;
  };
  int64_t work = 0;
  intern(nfa.Closure({frag->first}, work));
  for (size_t d = 0; d < sets.size(); ++d) {
    if (sets.size() > static_cast<size_t>(kMaxStates)) {
      return absl::InvalidArgumentError(absl::StrCat("regular expression: more than ", kMaxStates,
                                                     " automaton states (simplify the pattern)"));
    }
    if (work > kMaxWork) {
      return absl::InvalidArgumentError(
          "regular expression: too complex to compile (simplify the pattern)");
    }
    std::vector<std::vector<int32_t>> by_byte(256);
    for (int32_t s : sets[d]) {
      for (const auto& [range, to] : nfa.states()[s].edges) {
        for (int b = range.first; b <= range.second; ++b) by_byte[b].push_back(to);
        work += range.second - range.first + 1;
      }
    }
    next.resize((d + 1) * 256, kDead);
    for (int b = 0; b < 256; ++b) {
      if (by_byte[b].empty()) continue;
      work += static_cast<int64_t>(by_byte[b].size());
      const int32_t to = intern(nfa.Closure(std::move(by_byte[b]), work));
      next[d * 256 + b] = to;
    }
  }

  // Keep the states from which an accepting one is reachable, renumbered in order.
  const size_t n = sets.size();
  std::vector<std::vector<int32_t>> preds(n);
  for (size_t d = 0; d < n; ++d) {
    for (int b = 0; b < 256; ++b) {
      if (next[d * 256 + b] != kDead) preds[next[d * 256 + b]].push_back(static_cast<int32_t>(d));
    }
  }
  std::vector<bool> live(n);
  std::vector<int32_t> stack;
  for (size_t d = 0; d < n; ++d) {
    if (accepting[d]) stack.push_back(static_cast<int32_t>(d));
  }
  while (!stack.empty()) {
    const int32_t d = stack.back();
    stack.pop_back();
    if (live[d]) continue;
    live[d] = true;
    for (int32_t p : preds[d]) stack.push_back(p);
  }
  if (!live[0]) return absl::InvalidArgumentError("regular expression: it matches nothing");
  std::vector<int32_t> renumber(n, kDead);
  int32_t kept = 0;
  for (size_t d = 0; d < n; ++d) {
    if (live[d]) renumber[d] = kept++;
  }
  ByteDfa dfa;
  dfa.next_.assign(static_cast<size_t>(kept) * 256, kDead);
  dfa.accepting_.assign(kept, false);
  dfa.has_next_.assign(kept, false);
  for (size_t d = 0; d < n; ++d) {
    if (!live[d]) continue;
    const int32_t nd = renumber[d];
    dfa.accepting_[nd] = accepting[d];
    for (int b = 0; b < 256; ++b) {
      const int32_t to = next[d * 256 + b];
      if (to == kDead || !live[to]) continue;
      dfa.next_[static_cast<size_t>(nd) * 256 + b] = renumber[to];
      dfa.has_next_[nd] = true;
    }
  }
  return dfa;
}

std::string RegexLiteral(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

std::string ChoicePattern(const std::vector<std::string>& choices) {
  std::string out;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) out += '|';
    out += "(?:" + RegexLiteral(choices[i]) + ')';
  }
  return out;
}

absl::StatusOr<GbnfNode> RegexToGbnf(std::string_view pattern) {
  auto tree = Parser(pattern, /*calls=*/true).Parse();
  if (!tree.ok()) return tree.status();
  return ToGbnf(**tree);
}

}  // namespace orca
