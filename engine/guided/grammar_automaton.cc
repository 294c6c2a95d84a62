#include "engine/guided/grammar_automaton.h"

#include <algorithm>
#include <array>
#include <deque>
#include <map>
#include <set>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"
#include "engine/guided/gbnf.h"
#include "engine/guided/token_guide.h"
#include "engine/guided/utf8_ranges.h"

namespace orca {

using Element = GrammarAutomaton::Element;
using ByteSet = GrammarAutomaton::ByteSet;

namespace {

bool Has(const ByteSet& s, uint8_t b) { return (s[b >> 6] >> (b & 63)) & 1; }
void Add(ByteSet& s, uint8_t lo, uint8_t hi) {
  for (int b = lo; b <= hi; ++b) s[static_cast<size_t>(b) >> 6] |= uint64_t{1} << (b & 63);
}
bool IsEnd(const Element& e) { return e.set < 0 && e.rule < 0; }

// Stacks ordered shallowest first, then from the top down: stacks of one configuration
// share long bottoms and differ near their tops, so comparisons end early.
struct ShallowTopFirst {
  bool operator()(const std::vector<int32_t>& a, const std::vector<int32_t>& b) const {
    if (a.size() != b.size()) return a.size() < b.size();
    return std::lexicographical_compare(a.rbegin(), a.rend(), b.rbegin(), b.rend());
  }
};

// Strongly connected components of a graph (iterative Tarjan); returns each node's.
std::vector<int32_t> Components(const std::vector<std::vector<int32_t>>& edges) {
  const auto n = static_cast<int32_t>(edges.size());
  std::vector<int32_t> index(edges.size(), -1), low(edges.size()), comp(edges.size(), -1);
  std::vector<int32_t> stack;
  std::vector<std::pair<int32_t, size_t>> calls;  // node, next edge
  int32_t next_index = 0, next_comp = 0;
  for (int32_t root = 0; root < n; ++root) {
    if (index[root] >= 0) continue;
    calls.emplace_back(root, 0);
    index[root] = low[root] = next_index++;
    stack.push_back(root);
    while (!calls.empty()) {
      auto& [v, e] = calls.back();
      if (e < edges[v].size()) {
        const int32_t w = edges[v][e++];
        if (index[w] < 0) {
          index[w] = low[w] = next_index++;
          stack.push_back(w);
          calls.emplace_back(w, 0);
        } else if (comp[w] < 0) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      const int32_t done = v;
      calls.pop_back();
      if (!calls.empty()) low[calls.back().first] = std::min(low[calls.back().first], low[done]);
      if (low[done] == index[done]) {
        int32_t w;
        do {
          w = stack.back();
          stack.pop_back();
          comp[w] = next_comp;
        } while (w != done);
        ++next_comp;
      }
    }
  }
  return comp;
}

}  // namespace

// Lowers parsed rules to the automaton's program and checks it (grammar_automaton.h).
class GrammarBuilder {
 public:
  GrammarBuilder(const GbnfRules& rules, GrammarAutomaton& g) : rules_(rules), g_(g) {}

  absl::Status Build() {
    if (!rules_.contains("root")) return absl::InvalidArgumentError("grammar: no 'root' rule");
    for (const auto& [name, body] : rules_) NewRule(name);
    g_.program_ = {Element{.set = -1, .rule = ids_.at("root")}, Element{}};
    int32_t id = 0;
    for (const auto& [name, body] : rules_) {
      if (body.kind == GbnfNode::kAlt) {
        for (const GbnfNode& alt : body.kids) ORCA_RETURN_IF_ERROR(AddAlternative(id, alt, name));
      } else {
        ORCA_RETURN_IF_ERROR(AddAlternative(id, body, name));
      }
      ++id;
    }
    DropUnfinishable();
    if (g_.alternatives_[static_cast<size_t>(ids_.at("root"))].empty()) {
      return absl::InvalidArgumentError(
          "grammar: 'root' has no finite sentence (every branch recurses forever or needs a "
          "character no class admits)");
    }
    return CheckLeftRecursion();
  }

 private:
  int32_t NewRule(const std::string& origin) {
    const auto id = static_cast<int32_t>(g_.alternatives_.size());
    g_.alternatives_.emplace_back();
    origin_.push_back(origin);
    if (!ids_.contains(origin)) ids_[origin] = id;
    return id;
  }
  absl::Status Append(int32_t rule, const std::vector<Element>& seq) {
    if (g_.program_.size() + seq.size() + 1 > GrammarAutomaton::kMaxElements) return TooLarge();
    g_.alternatives_[static_cast<size_t>(rule)].push_back(static_cast<int32_t>(g_.program_.size()));
    g_.program_.insert(g_.program_.end(), seq.begin(), seq.end());
    g_.program_.push_back(Element{});
    return absl::OkStatus();
  }
  absl::Status AddAlternative(int32_t rule, const GbnfNode& n, const std::string& origin) {
    std::vector<Element> seq;
    ORCA_RETURN_IF_ERROR(Lower(n, seq, origin));
    return Append(rule, seq);
  }
  static absl::Status TooLarge() {
    return absl::InvalidArgumentError(absl::StrCat(
        "grammar: over ", GrammarAutomaton::kMaxElements,
        " elements once its repetitions are expanded: use fewer or smaller {m,n} counts"));
  }
  Element SetElement(const ByteSet& s) {
    auto [it, added] = set_ids_.try_emplace(s, static_cast<int32_t>(g_.sets_.size()));
    if (added) g_.sets_.push_back(s);
    return Element{.set = it->second, .rule = -1};
  }

  // Appends `n`'s elements to `seq`, making helper rules as needed.
  absl::Status Lower(const GbnfNode& n, std::vector<Element>& seq, const std::string& origin) {
    if (seq.size() > GrammarAutomaton::kMaxElements) return TooLarge();
    switch (n.kind) {
      case GbnfNode::kLiteral:
        for (char c : n.text) {
          ByteSet s{};
          Add(s, static_cast<uint8_t>(c), static_cast<uint8_t>(c));
          seq.push_back(SetElement(s));
        }
        return absl::OkStatus();
      case GbnfNode::kClass:
        return LowerClass(n.chars, seq, origin);
      case GbnfNode::kRef: {
        auto it = ids_.find(n.text);
        if (it == ids_.end()) {
          return absl::InvalidArgumentError(
              absl::StrCat("grammar: rule '", n.text, "' is not defined"));
        }
        seq.push_back(Element{.set = -1, .rule = it->second});
        return absl::OkStatus();
      }
      case GbnfNode::kSeq:
        for (const GbnfNode& k : n.kids) ORCA_RETURN_IF_ERROR(Lower(k, seq, origin));
        return absl::OkStatus();
      case GbnfNode::kAlt: {
        if (n.kids.size() == 1) return Lower(n.kids[0], seq, origin);
        const int32_t rule = NewRule(origin);
        for (const GbnfNode& k : n.kids) ORCA_RETURN_IF_ERROR(AddAlternative(rule, k, origin));
        seq.push_back(Element{.set = -1, .rule = rule});
        return absl::OkStatus();
      }
      case GbnfNode::kRepeat:
        return LowerRepeat(n, seq, origin);
    }
    return absl::OkStatus();
  }

  // A class: its one-byte sequences as one set, each longer UTF-8 sequence an
  // alternative of a helper rule (shared by equal classes).
  absl::Status LowerClass(const CodeRanges& chars, std::vector<Element>& seq,
                          const std::string& origin) {
    if (auto it = class_rules_.find(chars); it != class_rules_.end()) {
      seq.push_back(it->second);
      return absl::OkStatus();
    }
    std::vector<ByteRanges> sequences;
    for (const auto& [lo, hi] : chars) Utf8Sequences(lo, hi, sequences);
    ByteSet single{};
    bool any_single = false;
    std::vector<std::vector<Element>> longer;
    for (const ByteRanges& r : sequences) {
      if (r.size() == 1) {
        Add(single, r[0].first, r[0].second);
        any_single = true;
        continue;
      }
      std::vector<Element> alt;
      for (const auto& [lo, hi] : r) {
        ByteSet s{};
        Add(s, lo, hi);
        alt.push_back(SetElement(s));
      }
      longer.push_back(std::move(alt));
    }
    Element e;
    if (longer.empty()) {
      e = SetElement(single);  // (possibly empty: a class nothing matches)
    } else {
      const int32_t rule = NewRule(origin);
      if (any_single) ORCA_RETURN_IF_ERROR(Append(rule, {SetElement(single)}));
      for (const auto& alt : longer) ORCA_RETURN_IF_ERROR(Append(rule, alt));
      e = Element{.set = -1, .rule = rule};
    }
    class_rules_.emplace(chars, e);
    seq.push_back(e);
    return absl::OkStatus();
  }

  // x{min,max}: min copies of x, then x* as S ::= x S | (empty), or max - min nested
  // optional copies O_j ::= x O_(j-1) | (empty). x longer than one element becomes a rule.
  absl::Status LowerRepeat(const GbnfNode& n, std::vector<Element>& seq,
                           const std::string& origin) {
    std::vector<Element> x;
    ORCA_RETURN_IF_ERROR(Lower(n.kids[0], x, origin));
    if (x.size() > 1) {
      const int32_t rule = NewRule(origin);
      ORCA_RETURN_IF_ERROR(Append(rule, x));
      x = {Element{.set = -1, .rule = rule}};
    }
    if (seq.size() + static_cast<size_t>(n.min) * x.size() > GrammarAutomaton::kMaxElements) {
      return TooLarge();
    }
    for (int i = 0; i < n.min; ++i) seq.insert(seq.end(), x.begin(), x.end());
    if (n.max == -1) {
      const int32_t star = NewRule(origin);
      std::vector<Element> again = x;
      again.push_back(Element{.set = -1, .rule = star});
      ORCA_RETURN_IF_ERROR(Append(star, again));
      ORCA_RETURN_IF_ERROR(Append(star, {}));
      seq.push_back(Element{.set = -1, .rule = star});
      return absl::OkStatus();
    }
    int32_t previous = -1;
    for (int j = n.min; j < n.max; ++j) {
      const int32_t optional = NewRule(origin);
      std::vector<Element> more = x;
      if (previous >= 0) more.push_back(Element{.set = -1, .rule = previous});
      ORCA_RETURN_IF_ERROR(Append(optional, more));
      ORCA_RETURN_IF_ERROR(Append(optional, {}));
      previous = optional;
    }
    if (previous >= 0) seq.push_back(Element{.set = -1, .rule = previous});
    return absl::OkStatus();
  }

  // The rules (true) for which some alternative has every element `ok`: a fixpoint
  // over a worklist, linear in the program. `base(e)` says whether a byte set counts.
  template <typename BaseOk>
  std::vector<bool> Fixpoint(BaseOk base) const {
    const auto& alts = g_.alternatives_;
    std::vector<int32_t> alt_rule, missing;               // per alternative
    std::vector<std::vector<int32_t>> uses(alts.size());  // rule -> alternatives waiting on it
    std::vector<bool> result(alts.size(), false);
    std::vector<int32_t> ready;
    for (size_t r = 0; r < alts.size(); ++r) {
      for (int32_t start : alts[r]) {
        const auto a = static_cast<int32_t>(alt_rule.size());
        alt_rule.push_back(static_cast<int32_t>(r));
        int32_t wait = 0;
        bool possible = true;
        for (int32_t p = start; !IsEnd(g_.program_[static_cast<size_t>(p)]); ++p) {
          const Element& e = g_.program_[static_cast<size_t>(p)];
          if (e.set >= 0) {
            possible = possible && base(e);
          } else {
            uses[static_cast<size_t>(e.rule)].push_back(a);
            ++wait;
          }
        }
        missing.push_back(possible ? wait : -1);
        if (possible && wait == 0) ready.push_back(a);
      }
    }
    while (!ready.empty()) {
      const int32_t a = ready.back();
      ready.pop_back();
      const int32_t r = alt_rule[static_cast<size_t>(a)];
      if (result[static_cast<size_t>(r)]) continue;
      result[static_cast<size_t>(r)] = true;
      for (int32_t b : uses[static_cast<size_t>(r)]) {
        if (missing[static_cast<size_t>(b)] > 0 && --missing[static_cast<size_t>(b)] == 0) {
          ready.push_back(b);
        }
      }
    }
    return result;
  }

  // Removes the alternatives that can never finish (they use a rule with no finite
  // sentence or a set that matches nothing), so every stack the automaton keeps can
  // still end.
  void DropUnfinishable() {
    const std::vector<bool> finishes = Fixpoint(
        [&](const Element& e) { return g_.sets_[static_cast<size_t>(e.set)] != ByteSet{}; });
    for (auto& alts : g_.alternatives_) {
      std::erase_if(alts, [&](int32_t start) {
        for (int32_t p = start; !IsEnd(g_.program_[static_cast<size_t>(p)]); ++p) {
          const Element& e = g_.program_[static_cast<size_t>(p)];
          if (e.set >= 0 ? g_.sets_[static_cast<size_t>(e.set)] == ByteSet{}
                         : !finishes[static_cast<size_t>(e.rule)]) {
            return true;
          }
        }
        return false;
      });
    }
  }

  // Left recursion: a rule reaching itself through references that read nothing before
  // them, one of which is not a tail call (tail-call cycles read nothing and push
  // nothing: Close's `seen` ends them).
  absl::Status CheckLeftRecursion() const {
    const std::vector<bool> nullable = Fixpoint([](const Element&) { return false; });
    const auto& alts = g_.alternatives_;
    std::vector<std::vector<int32_t>> edges(alts.size());
    std::vector<std::pair<int32_t, int32_t>> pushing;  // non-tail edges
    for (size_t r = 0; r < alts.size(); ++r) {
      for (int32_t start : alts[r]) {
        for (int32_t p = start;; ++p) {
          const Element& e = g_.program_[static_cast<size_t>(p)];
          if (e.rule < 0) break;  // a set or the end
          edges[r].push_back(e.rule);
          if (!IsEnd(g_.program_[static_cast<size_t>(p) + 1])) {
            pushing.emplace_back(static_cast<int32_t>(r), e.rule);
          }
          if (!nullable[static_cast<size_t>(e.rule)]) break;
        }
      }
    }
    const std::vector<int32_t> comp = Components(edges);
    for (const auto& [from, to] : pushing) {
      if (comp[static_cast<size_t>(from)] != comp[static_cast<size_t>(to)]) continue;
      return absl::InvalidArgumentError(absl::StrCat(
          "grammar: rule '", origin_[static_cast<size_t>(from)],
          "' is left-recursive (it can reach itself before reading a character): write the "
          "repetition with * or +, e.g. expr ::= term (\"+\" term)*"));
    }
    return absl::OkStatus();
  }

  const GbnfRules& rules_;
  GrammarAutomaton& g_;
  std::map<std::string, int32_t> ids_;
  std::vector<std::string> origin_;  // per rule: the named rule it was written in
  std::map<ByteSet, int32_t> set_ids_;
  std::map<CodeRanges, Element> class_rules_;
};

absl::StatusOr<std::unique_ptr<const GrammarAutomaton>> GrammarAutomaton::Compile(
    std::string_view gbnf, int32_t max_states, bool probe) {
  absl::StatusOr<GbnfRules> rules = ParseGbnf(gbnf);
  if (!rules.ok()) return rules.status();
  return Compile(*rules, max_states, probe);
}

absl::StatusOr<std::unique_ptr<const GrammarAutomaton>> GrammarAutomaton::Compile(
    const GbnfRules& rules, int32_t max_states, bool probe) {
  std::unique_ptr<GrammarAutomaton> g(new GrammarAutomaton());
  g->max_states_ = std::max(max_states, 1);
  GrammarBuilder builder(rules, *g);
  ORCA_RETURN_IF_ERROR(builder.Build());
  {
    absl::MutexLock lock(&g->mu_);
    g->Intern(g->Close({Stack{0}}));  // the start state, id 0
  }
  if (probe) ORCA_RETURN_IF_ERROR(g->ProbeAmbiguity());
  return std::unique_ptr<const GrammarAutomaton>(std::move(g));
}

GrammarAutomaton::Config GrammarAutomaton::Close(Config work, Cost* cost) const {
  // Stacks met, hashed (an ordered set compared deep stacks element by element: the
  // bulk of a step of an ambiguous grammar).
  absl::flat_hash_set<Stack> seen;
  Config out;
  size_t done = 0;
  while (!work.empty() && done <= kMaxStepWork) {
    Stack st = std::move(work.back());
    work.pop_back();
    done += st.size() + 1;
    if (!seen.insert(st).second) continue;
    if (st.empty()) {
      out.push_back(std::move(st));
      continue;
    }
    const Element e = program_[static_cast<size_t>(st.back())];
    if (e.set >= 0) {
      out.push_back(std::move(st));
      continue;
    }
    if (e.rule < 0) {  // the end of an alternative: return to the caller
      st.pop_back();
      work.push_back(std::move(st));
      continue;
    }
    // A reference: the caller continues after it, unless nothing follows (tail call).
    if (IsEnd(program_[static_cast<size_t>(st.back()) + 1])) {
      st.pop_back();
    } else {
      st.back() += 1;
    }
    if (st.size() >= kMaxDepth) continue;
    for (int32_t start : alternatives_[static_cast<size_t>(e.rule)]) {
      Stack next = st;
      next.push_back(start);
      work.push_back(std::move(next));
    }
  }
  // One order per set, so equal configurations intern as one state: shallowest first,
  // so what is cut off is the deepest nesting, then by a fingerprint of the whole stack
  // (stacks of an ambiguous grammar share long tops, and comparing them element by
  // element was the bulk of a step), the stacks themselves breaking ties. The stacks are
  // distinct (`seen`). Only the kMaxStacks first can be kept, so those are selected
  // before they are sorted.
  struct Keyed {
    size_t size;
    uint64_t fingerprint;
    size_t index;
  };
  bool cut = !work.empty();  // (the step's work ran out)
  std::vector<Keyed> keys;
  keys.reserve(out.size());
  for (size_t i = 0; i < out.size(); ++i) {
    uint64_t f = 14695981039346656037ull;  // FNV-1a over the positions
    for (int32_t v : out[i]) f = (f ^ static_cast<uint32_t>(v)) * 1099511628211ull;
    keys.push_back(Keyed{out[i].size(), f, i});
  }
  auto before = [&out](const Keyed& a, const Keyed& b) {
    if (a.size != b.size) return a.size < b.size;
    if (a.fingerprint != b.fingerprint) return a.fingerprint < b.fingerprint;
    return ShallowTopFirst()(out[a.index], out[b.index]);
  };
  if (keys.size() > kMaxStacks) {
    cut = true;
    std::nth_element(keys.begin(), keys.begin() + kMaxStacks, keys.end(), before);
    keys.resize(kMaxStacks);
  }
  std::sort(keys.begin(), keys.end(), before);
  Config ordered;
  ordered.reserve(keys.size());
  for (const Keyed& k : keys) ordered.push_back(std::move(out[k.index]));
  out = std::move(ordered);
  size_t kept = 0, positions = 0;
  while (kept < out.size() && kept < kMaxStacks && positions + out[kept].size() <= kMaxPositions) {
    positions += out[kept++].size();
  }
  cut |= kept < out.size();
  out.resize(kept);
  if (cost != nullptr) {
    cost->work += done;
    cost->cut |= cut;
  }
  return out;
}

GrammarAutomaton::Config GrammarAutomaton::Step(const Config& from, uint8_t byte,
                                                Cost* cost) const {
  Config advanced;
  for (const Stack& st : from) {
    if (st.empty()) continue;
    const Element& top = program_[static_cast<size_t>(st.back())];
    if (!Has(sets_[static_cast<size_t>(top.set)], byte)) continue;
    Stack next = st;
    next.back() += 1;
    advanced.push_back(std::move(next));
  }
  if (advanced.empty()) return advanced;
  return Close(std::move(advanced), cost);
}

namespace {

// A configuration as a hash key.
std::string Key(const std::vector<std::vector<int32_t>>& stacks) {
  std::string key;
  for (const auto& s : stacks) {
    const auto n = static_cast<int32_t>(s.size());
    key.append(reinterpret_cast<const char*>(&n), sizeof(n));
    key.append(reinterpret_cast<const char*>(s.data()), s.size() * sizeof(int32_t));
  }
  return key;
}

}  // namespace

int32_t GrammarAutomaton::Intern(Config stacks) const {
  if (stacks.empty()) return kDead;
  std::string key = Key(stacks);
  if (auto it = ids_.find(key); it != ids_.end()) return it->second;
  if (states_.size() >= static_cast<size_t>(max_states_)) return kDead;
  auto state = std::make_unique<State>();
  for (const Stack& s : stacks) {
    state->accepting |= s.empty();
    state->has_next |= !s.empty();
    if (s.empty()) continue;
    const ByteSet& set = sets_[static_cast<size_t>(program_[static_cast<size_t>(s.back())].set)];
    for (size_t w = 0; w < set.size(); ++w) state->first[w] |= set[w];
  }
  state->stacks = std::move(stacks);
  const auto id = static_cast<int32_t>(states_.size());
  states_.push_back(std::move(state));
  ids_.emplace(std::move(key), id);
  return id;
}

const GrammarAutomaton::Config& GrammarAutomaton::ConfigOf(int32_t state) const {
  static const Config kNone;
  absl::MutexLock lock(&mu_);
  if (state < 0 || static_cast<size_t>(state) >= states_.size()) return kNone;
  // A State never moves (unique_ptr) and its stacks never change once interned, so the
  // reference stays valid and may be read outside the lock.
  return states_[static_cast<size_t>(state)]->stacks;
}

int32_t GrammarAutomaton::Next(int32_t state, uint8_t byte) const {
  {
    absl::MutexLock lock(&mu_);
    if (state < 0 || static_cast<size_t>(state) >= states_.size()) return kDead;
    const State& s = *states_[static_cast<size_t>(state)];
    if (!Has(s.first, byte)) return kDead;
    if (auto it = s.next.find(byte); it != s.next.end()) return it->second;
  }
  Config to = Step(ConfigOf(state), byte);  // (outside the lock)
  absl::MutexLock lock(&mu_);
  const int32_t id = Intern(std::move(to));
  // (Intern may have grown states_, but each State stays where it is.)
  states_[static_cast<size_t>(state)]->next[byte] = id;
  return id;
}

int32_t GrammarAutomaton::Walk(int32_t state, std::string_view bytes) const {
  if (bytes.empty()) return ConfigOf(state).empty() ? kDead : state;
  Config c = Step(ConfigOf(state), static_cast<uint8_t>(bytes[0]));
  for (char b : bytes.substr(1)) {
    if (c.empty()) return kDead;
    c = Step(c, static_cast<uint8_t>(b));
  }
  absl::MutexLock lock(&mu_);
  return Intern(std::move(c));
}

absl::Status GrammarAutomaton::ProbeAmbiguity() const {
  // Breadth first from the start, each configuration with the bytes that reached it.
  std::deque<std::pair<Config, std::string>> queue;
  queue.emplace_back(ConfigOf(start()), "");
  absl::flat_hash_set<std::string> seen = {Key(queue.front().first)};
  Cost cost;
  for (size_t explored = 0; !queue.empty() && explored < kProbeConfigs; ++explored) {
    auto [config, bytes] = std::move(queue.front());
    queue.pop_front();
    // Bytes that the same tops take lead to the same configuration: one of each tried.
    // A byte's signature hashes the distinct sets that take it.
    std::vector<int32_t> tops;
    for (const Stack& st : config) {
      if (!st.empty()) tops.push_back(program_[static_cast<size_t>(st.back())].set);
    }
    std::sort(tops.begin(), tops.end());
    tops.erase(std::unique(tops.begin(), tops.end()), tops.end());
    std::array<uint64_t, 256> signature{};
    for (int32_t t : tops) {
      const ByteSet& set = sets_[static_cast<size_t>(t)];
      for (int b = 0; b < 256; ++b) {
        if (Has(set, static_cast<uint8_t>(b))) {
          signature[static_cast<size_t>(b)] =
              (signature[static_cast<size_t>(b)] ^ static_cast<uint64_t>(t + 1)) * 1099511628211ull;
        }
      }
    }
    absl::flat_hash_set<uint64_t> tried;
    for (int b = 0; b < 256 && cost.work < kProbeWork; ++b) {
      const uint64_t sig = signature[static_cast<size_t>(b)];
      if (sig == 0 || !tried.insert(sig).second) continue;
      Cost step;
      Config next = Step(config, static_cast<uint8_t>(b), &step);
      cost.work += step.work;
      std::string reached = bytes + static_cast<char>(b);
      if (step.cut) {
        return absl::InvalidArgumentError(absl::StrCat(
            "grammar: too ambiguous: after \"", absl::CHexEscape(reached), "\" it can be read in ",
            "more than ", kMaxStacks, " ways at once (or ", kMaxPositions,
            " rule positions; the limits): an optional or possibly empty item inside a "
            "repetition, or alternatives that match the same text, multiply the readings of "
            "every character; make them distinct"));
      }
      if (!next.empty() && seen.insert(Key(next)).second) {
        queue.emplace_back(std::move(next), std::move(reached));
      }
    }
  }
  return absl::OkStatus();
}

// Configurations met by one mask's walks, numbered for those walks only, with their
// transitions (a byte class loops back to one configuration: computed once). Past
// kMaxMaskWork positions looked at, bytes not yet tried lead nowhere.
class GrammarAutomaton::Walker {
 public:
  explicit Walker(const GrammarAutomaton& g) : g_(g) {}

  // The configuration's number (kDead for an empty one).
  int32_t Add(Config c) {
    if (c.empty()) return kDead;
    auto [it, added] = ids_.try_emplace(Key(c), static_cast<int32_t>(configs_.size()));
    if (added) {
      width_ = std::max(width_, c.size());
      for (const Stack& st : c) deepest_ = std::max(deepest_, st.size());
      configs_.push_back(std::move(c));
      if (dense_.size() < kDense) dense_.emplace_back().fill(kUnknown);
    }
    return it->second;
  }
  int32_t Step(int32_t from, uint8_t byte) {
    int32_t* known = Memo(from, byte);
    if (*known != kUnknown) return *known;
    if (cost_.work > kMaxMaskWork) {
      cost_.cut = true;
      return kDead;
    }
    Cost step;
    Config c = g_.Step(configs_[static_cast<size_t>(from)], byte, &step);
    cost_.work += step.work;
    cost_.cut |= step.cut;
    step_work_ = std::max(step_work_, step.work);
    const int32_t to = Add(std::move(c));
    *Memo(from, byte) = to;  // (Add may have moved dense_)
    return to;
  }
  // Whether configuration `id` holds the empty stack (it is sorted shallowest first).
  bool Returned(int32_t id) const { return configs_[static_cast<size_t>(id)].front().empty(); }

  // A walk's largest configuration, deepest stack and dearest step; and whether a bound
  // cut it (or the budget ended it).
  size_t width() const { return width_; }
  size_t deepest() const { return deepest_; }
  size_t step_work() const { return step_work_; }
  bool cut() const { return cost_.cut; }

 private:
  const GrammarAutomaton& g_;
  std::vector<Config> configs_;
  // The transitions: a table for each of the first kDense configurations (the common
  // case, and fast), a hash map past them (bounded memory for walks that meet many).
  static constexpr int32_t kUnknown = -2;  // (kDead is -1)
  static constexpr size_t kDense = 4096;
  int32_t* Memo(int32_t from, uint8_t byte) {
    if (static_cast<size_t>(from) < kDense) return &dense_[static_cast<size_t>(from)][byte];
    return &sparse_.try_emplace(static_cast<uint64_t>(from) << 8 | byte, kUnknown).first->second;
  }
  std::vector<std::array<int32_t, 256>> dense_;
  absl::flat_hash_map<uint64_t, int32_t> sparse_;
  absl::flat_hash_map<std::string, int32_t> ids_;
  Cost cost_;
  size_t width_ = 0, deepest_ = 0, step_work_ = 0;
};

void GrammarAutomaton::AllowTokensByWalk(int32_t state, const TokenVocabulary& vocab,
                                         std::vector<uint32_t>& mask) const {
  FitMaskTo(vocab, mask);
  Walker w(*this);
  const int32_t from = w.Add(ConfigOf(state));
  if (from == kDead) return;
  MarkReachableTokens(
      vocab, from, [&](int32_t s, uint8_t byte) { return w.Step(s, byte); }, mask);
}

namespace {

void SetBit(std::vector<uint32_t>& mask, int32_t t) {
  mask[static_cast<size_t>(t) / 32] |= 1u << (t % 32);
}
bool Bit(const std::vector<uint32_t>& mask, int32_t t) {
  return (mask[static_cast<size_t>(t) / 32] >> (t % 32)) & 1;
}

}  // namespace

std::shared_ptr<const GrammarAutomaton::TopMask> GrammarAutomaton::MakeTopMask(
    const Stack& key, const TokenVocabulary& vocab) const {
  // (A whole stack's key ends with kWholeStack; its walk is the stack's.)
  const bool whole = !key.empty() && key.back() == kWholeStack;
  const Stack top(key.begin(), key.end() - (whole ? 1 : 0));
  const bool may_deepen = !whole && top.size() < kTopFrames;
  // The trie walked from the top alone: a token that ends on a living configuration is
  // allowed whatever lies below (the empty stack included: the real stack goes on below
  // it). Where a configuration holds the empty stack, the walk has returned from the top
  // and the bytes that follow are read by what lies below: every longer token under that
  // node depends on it (unless allowed anyway).
  auto out = std::make_shared<TopMask>();
  const size_t words = (static_cast<size_t>(vocab.size()) + 31) / 32;
  out->allowed.assign(words, 0);
  std::vector<std::pair<int32_t, int32_t>> returns;  // in_trie_order() ranges, disjoint
  Walker w(*this);
  const auto& trie = vocab.trie();
  const auto& order = vocab.in_trie_order();
  const auto& bytes = vocab.child_bytes();
  const auto& kids = vocab.child_nodes();
  struct Visit {
    int32_t node, config;
    bool below_return;  // an ancestor's configuration returned (its subtree marked)
  };
  std::vector<Visit> stack = {{0, w.Add({top}), false}};
  while (!stack.empty()) {
    const Visit v = stack.back();
    stack.pop_back();
    const TokenVocabulary::TrieNode& n = trie[static_cast<size_t>(v.node)];
    for (int32_t i = n.first; i < n.own_end; ++i)
      SetBit(out->allowed, order[static_cast<size_t>(i)]);
    bool below = v.below_return;
    if (!below && w.Returned(v.config)) {
      if (may_deepen && n.own_end < n.end) {
        out->deeper = true;  // longer tokens may return from it: no need to walk on
        break;
      }
      returns.emplace_back(n.own_end, n.end);
      below = true;
    }
    for (int32_t c = n.children_end - 1; c >= n.children_begin; --c) {
      const int32_t next = w.Step(v.config, bytes[static_cast<size_t>(c)]);
      if (next != kDead) stack.push_back({kids[static_cast<size_t>(c)], next, below});
    }
  }
  std::sort(returns.begin(), returns.end());
  for (const auto& [first, end] : returns) {
    for (int32_t i = first; i < end; ++i) {
      const int32_t t = order[static_cast<size_t>(i)];
      if (!Bit(out->allowed, t)) out->dependent.push_back(t);
    }
  }
  if (may_deepen && !out->dependent.empty()) out->deeper = true;
  if (!out->deeper && out->dependent.size() > static_cast<size_t>(vocab.size()) / 8) {
    out->walk_instead = true;
  }
  if (out->deeper || out->walk_instead) {
    std::vector<uint32_t>().swap(out->allowed);
    std::vector<int32_t>().swap(out->dependent);
  }
  out->width = w.width();
  out->deepest = w.deepest();
  out->step_work = w.step_work();
  out->cut = w.cut();
  return out;
}

std::shared_ptr<const GrammarAutomaton::TopMask> GrammarAutomaton::TopMaskOf(
    const Stack& key, const TokenVocabulary& vocab) const {
  {
    absl::MutexLock lock(&top_mu_);
    if (top_vocab_ != 0 && top_vocab_ != vocab.id()) return nullptr;
    if (auto it = top_masks_.find(key); it != top_masks_.end()) return it->second;
    if (top_bytes_ >= kMaxTopMaskBytes) return nullptr;
  }
  // Walked without the lock (two threads may make one top's mask: the first is kept).
  std::shared_ptr<const TopMask> made = MakeTopMask(key, vocab);
  absl::MutexLock lock(&top_mu_);
  if (top_vocab_ != 0 && top_vocab_ != vocab.id()) return made;
  top_vocab_ = vocab.id();
  auto [it, added] = top_masks_.try_emplace(key, std::move(made));
  if (added) top_bytes_ += it->second->bytes();
  return it->second;
}

std::shared_ptr<const GrammarAutomaton::TopMask> GrammarAutomaton::TopMaskFor(
    const Stack& st, const TokenVocabulary& vocab, size_t* frames) const {
  const size_t most = std::min(st.size(), kTopFrames);
  for (size_t k = 1; k <= most; ++k) {
    Stack key(st.end() - static_cast<std::ptrdiff_t>(k), st.end());
    if (k == st.size()) key.push_back(kWholeStack);
    std::shared_ptr<const TopMask> m = TopMaskOf(key, vocab);
    if (m == nullptr || !m->deeper) {
      *frames = k;
      return m;
    }
  }
  return nullptr;  // (unreachable: the last key never deepens)
}

void GrammarAutomaton::AllowTokens(int32_t state, const TokenVocabulary& vocab,
                                   std::vector<uint32_t>& mask) const {
  FitMaskTo(vocab, mask);
  const Config& config = ConfigOf(state);
  // The state's stacks grouped by their kept masks (in the configuration's order). Kept
  // masks answer only where the real walk could not be cut: each real stack, deeper by
  // what lies below its top, may grow as its top's walk did, and every bound must hold
  // for all of them at once.
  std::vector<std::pair<std::shared_ptr<const TopMask>, Config>> groups;
  absl::flat_hash_map<const TopMask*, size_t> group_of;
  size_t stacks = 0, positions = 0, step_work = 0;
  for (const Stack& st : config) {
    if (st.empty()) continue;  // (the output may end here: it reads nothing more)
    size_t frames = 0;
    std::shared_ptr<const TopMask> m = TopMaskFor(st, vocab, &frames);
    if (m == nullptr || m->cut || m->walk_instead) return AllowTokensByWalk(state, vocab, mask);
    const size_t below = st.size() - frames;
    if (m->deepest + below + 1 >= kMaxDepth) return AllowTokensByWalk(state, vocab, mask);
    stacks += m->width;
    positions += m->width * (m->deepest + below);
    step_work += m->step_work * (below + 1);
    auto [it, added] = group_of.try_emplace(m.get(), groups.size());
    if (added) groups.emplace_back(std::move(m), Config{});
    groups[it->second].second.push_back(st);
  }
  if (stacks > kMaxStacks || positions > kMaxPositions || step_work > kMaxStepWork) {
    return AllowTokensByWalk(state, vocab, mask);
  }
  // The union of the tops' allowed tokens, then their dependent tokens walked from the
  // real stacks: consecutive tokens share a prefix in trie order, and a prefix that died
  // takes every token after it that extends it.
  Walker w(*this);
  for (size_t g = 0; g < groups.size(); ++g) {
    const TopMask& m = *groups[g].first;
    for (size_t i = 0; i < mask.size(); ++i) mask[i] |= m.allowed[i];
    if (m.dependent.empty()) continue;
    std::vector<int32_t> path = {w.Add(groups[g].second)};  // configurations after prev[:i]
    std::string_view prev;
    bool prev_died = false;  // after path.size() bytes of prev
    for (int32_t t : m.dependent) {
      const std::string& bytes = vocab.bytes(t);
      size_t common = 0;
      while (common < prev.size() && common < bytes.size() && prev[common] == bytes[common]) {
        ++common;
      }
      if (prev_died && common >= path.size()) continue;
      path.resize(std::min(common, path.size() - 1) + 1);
      prev = bytes;
      prev_died = false;
      for (size_t i = path.size() - 1; i < bytes.size(); ++i) {
        const int32_t next = w.Step(path.back(), static_cast<uint8_t>(bytes[i]));
        if (next == kDead) {
          prev_died = true;
          break;
        }
        path.push_back(next);
      }
      if (!prev_died) SetBit(mask, t);
    }
  }
  // Out of budget (dependent tokens may have been missed): the walk adds what it finds.
  if (w.cut()) AllowTokensByWalk(state, vocab, mask);
}

size_t GrammarAutomaton::num_top_masks() const {
  absl::MutexLock lock(&top_mu_);
  return top_masks_.size();
}

bool GrammarAutomaton::accepting(int32_t state) const {
  absl::MutexLock lock(&mu_);
  return state >= 0 && static_cast<size_t>(state) < states_.size() &&
         states_[static_cast<size_t>(state)]->accepting;
}

bool GrammarAutomaton::has_next(int32_t state) const {
  absl::MutexLock lock(&mu_);
  return state >= 0 && static_cast<size_t>(state) < states_.size() &&
         states_[static_cast<size_t>(state)]->has_next;
}

size_t GrammarAutomaton::depth(int32_t state) const {
  size_t deepest = 0;
  for (const Stack& s : ConfigOf(state)) deepest = std::max(deepest, s.size());
  return deepest;
}

size_t GrammarAutomaton::positions(int32_t state) const {
  size_t total = 0;
  for (const Stack& s : ConfigOf(state)) total += s.size();
  return total;
}

int32_t GrammarAutomaton::num_states() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int32_t>(states_.size());
}

}  // namespace orca
