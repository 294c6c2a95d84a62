// A context-free grammar (GBNF, gbnf.h) as an automaton over output bytes for the
// guided decoder (token_guide.h): a pushdown automaton whose configurations become
// states as the output reaches them.
//
// The grammar is lowered to a program: each rule a list of alternatives, each a run of
// elements (a set of bytes, or a reference to a rule) ended by an end marker; character
// classes become their UTF-8 byte sequences, repetitions helper rules. A configuration
// is the set of stacks of positions the grammar may be at (llama.cpp's matcher), each
// expanded until its top is a byte set (an empty stack: the input so far is a sentence).
// A reference at the end of an alternative replaces its caller's position instead of
// pushing a return (tail calls), so right recursion and repetition do not grow stacks.
// Reading a byte advances every stack whose top admits it and re-expands. Walk (a token's
// bytes) interns the configuration it ends in as a state id, so a state's token mask is
// computed once (token_guide.h) and nesting is unbounded. Next memoizes single bytes
// (tests).
//
// Token masks (AllowTokens) are made from masks kept per stack top, as xgrammar's
// adaptive token mask cache does: what a token does from a stack depends only on its top
// positions until the token's bytes return from the lowest of them. So for each top
// (walked once, from the top alone) the automaton keeps the tokens allowed whatever lies
// below and the few "dependent" ones that return from it mid-token; a state's mask is
// the union of its stacks' tops' allowed tokens plus those dependent tokens that its
// real stacks let through (walked from them, in trie order, sharing prefixes). A top is
// a stack's fewest top positions from which no token returns mid-token, up to
// kTopFrames (a whole stack is a top of its own): a shorter top that some tokens return
// from is kept as a marker that says "look one position deeper". Keying by as few
// positions as answer, rather than always kTopFrames, keeps the tops few: the positions
// of a nested outline's enclosing levels do not multiply them (120 tops after 352
// requests of orca-bench-guided-mask's BM_ServedRequests, where kTopFrames positions
// kept 7,885 and went on growing towards kMaxTopMaskBytes, past which states are
// walked). A state nesting at a depth no output reached before so costs a few ORs of
// kept masks instead of a walk of the whole vocabulary. Where a bound (below) could cut
// the real walk, where a top's dependent tokens are over an eighth of the vocabulary
// (walking them would cost what a walk does), or once the kept masks hold
// kMaxTopMaskBytes, the mask is made by one walk of the vocabulary's trie over
// configurations of its own (AllowTokensByWalk), memoized for that walk only: either way
// a mask makes no states (only where outputs go do).
//
// Refused at Compile (InvalidArgument): what ParseGbnf refuses; left recursion (a rule
// that can reach itself before reading a byte, not at the end of an alternative: write
// it as a repetition); a root with no finite sentence; over kMaxElements elements once
// repetitions are expanded; and a grammar too ambiguous to run: Compile explores the
// configurations of the first bytes breadth first (up to kProbeConfigs of them or
// kProbeWork positions; bytes that lead alike tried once) and refuses the grammar when
// one step outgrows kMaxStacks, kMaxPositions or kMaxStepWork, naming the bytes that got
// there (an optional item inside a repetition multiplies the readings of every byte).
// Rules that cannot finish (infinite recursion) are dropped.
//
// Bounds while running (so that one request's grammar costs the others nothing): a
// stack deeper than kMaxDepth (nesting that deep), a configuration beyond kMaxStacks
// stacks or kMaxPositions positions in all (ambiguity that grows slowly; the deepest
// stacks go first), a step's expansion past kMaxStepWork positions looked at, a mask's
// trie walk past kMaxMaskWork (tokens not reached are not allowed; a mask made from kept
// tops, which looks at far fewer positions, may allow some that the walk's budget left
// out, never fewer) and any state past kMaxStates are cut off (those continuations
// become kDead): what the guide allows is always a sentence prefix, but such sentences
// cannot be produced; a guide past kMaxStates says so (exhausted()) and the guide cache
// compiles a fresh one for later requests. Thread-safe: states and kept tops are made
// under mutexes, walks run outside them.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "engine/guided/byte_automaton.h"
#include "engine/guided/gbnf.h"

namespace orca {

class GrammarAutomaton final : public ByteAutomaton {
 public:
  static constexpr int32_t kMaxStates = 200000;
  static constexpr size_t kMaxDepth = 512;
  static constexpr size_t kMaxStacks = 1024;
  // Positions across a configuration's stacks: bounds what one step copies and expands
  // (an ambiguous grammar nesting deep has many deep stacks) and what a state holds.
  static constexpr size_t kMaxPositions = size_t{1} << 13;
  // Stack positions one step's expansion looks at, and one mask's trie walk in all: a
  // step costs at most a few milliseconds, a mask some tens.
  static constexpr size_t kMaxStepWork = size_t{1} << 19;
  static constexpr size_t kMaxMaskWork = size_t{1} << 24;
  // Configurations Compile's ambiguity probe explores, and positions it looks at in all.
  static constexpr size_t kProbeConfigs = 256;
  static constexpr size_t kProbeWork = size_t{1} << 22;
  static constexpr size_t kMaxElements = 1 << 18;
  // Stack positions a kept mask is keyed by, and the bytes the kept masks may hold in all
  // (each one bit per token of the vocabulary, 4 bytes per dependent token and ~256 of
  // its own: some 2,000 tops at 128,256 tokens).
  static constexpr size_t kTopFrames = 6;
  // Ends the key of a top that is a whole stack (program positions are never negative).
  static constexpr int32_t kWholeStack = -1;
  static constexpr size_t kMaxTopMaskBytes = size_t{32} << 20;

  // Tests only: `max_states` other than kMaxStates; `probe` false to run grammars the
  // ambiguity probe refuses (the bounds while running hold them).
  static absl::StatusOr<std::unique_ptr<const GrammarAutomaton>> Compile(
      std::string_view gbnf, int32_t max_states = kMaxStates, bool probe = true);
  // Rules made by a program (json_schema.h); references to rules not among them and a
  // missing `root` are refused as the text's are.
  static absl::StatusOr<std::unique_ptr<const GrammarAutomaton>> Compile(
      const GbnfRules& rules, int32_t max_states = kMaxStates, bool probe = true);

  int32_t start() const override { return 0; }
  int32_t Next(int32_t state, uint8_t byte) const override;
  bool accepting(int32_t state) const override;
  bool has_next(int32_t state) const override;
  int32_t Walk(int32_t state, std::string_view bytes) const override;
  void AllowTokens(int32_t state, const TokenVocabulary& vocab,
                   std::vector<uint32_t>& mask) const override;
  // The same mask by one walk of the trie from the state's whole configuration (what
  // AllowTokens falls back to): the reference for tests and the benchmark.
  void AllowTokensByWalk(int32_t state, const TokenVocabulary& vocab,
                         std::vector<uint32_t>& mask) const;
  // Stack tops whose masks are kept (tests and the benchmark).
  size_t num_top_masks() const;
  // States made so far, and whether they reached kMaxStates.
  int32_t num_states() const;
  // The deepest stack of a state (0 for an unknown one): how near kMaxDepth it is.
  size_t depth(int32_t state) const;
  // Positions across the state's stacks (at most kMaxPositions).
  size_t positions(int32_t state) const;
  bool exhausted() const override { return num_states() >= max_states_; }

  // One element of the program.
  struct Element {
    int32_t set = -1;   // >= 0: the byte set it matches
    int32_t rule = -1;  // >= 0: the rule it expands; neither: end of an alternative
  };
  using ByteSet = std::array<uint64_t, 4>;

 private:
  using Stack = std::vector<int32_t>;  // positions in program_, the top last
  using Config = std::vector<Stack>;   // shallowest first; tops are byte sets, or empty
  struct State {
    Config stacks;
    bool accepting = false, has_next = false;
    ByteSet first{};  // the bytes some stack's top takes: any other byte is dead at once
    absl::flat_hash_map<uint8_t, int32_t> next;  // Next's memo
  };

  // What expansions cost: positions looked at, and whether a breadth bound (kMaxStacks,
  // kMaxPositions, kMaxStepWork; not kMaxDepth) dropped stacks.
  struct Cost {
    size_t work = 0;
    bool cut = false;
  };
  // Configurations met by one mask's walks, numbered, with their transitions
  // (grammar_automaton.cc).
  class Walker;
  // What tokens do from a stack whose top positions are a given `top` (kTopFrames of
  // them, or the whole stack when shallower), whatever lies below it.
  struct TopMask {
    std::vector<uint32_t> allowed;   // allowed from the top alone: from any stack with it
    std::vector<int32_t> dependent;  // not allowed so, but return from the top mid-token
                                     // (so may be from some stacks), in trie order
    // The walk's largest configuration (stacks), deepest stack and dearest step, and
    // whether a bound cut it: what the real walk could cost (AllowTokens' check).
    size_t width = 0, deepest = 0, step_work = 0;
    bool cut = false;
    // Over an eighth of the vocabulary depends on what lies below: kept without its
    // tokens (allowed and dependent empty), and states with this top are walked.
    bool walk_instead = false;
    // Some tokens return from the top mid-token, and the stacks with this top have a
    // position below it to key by: kept without its tokens, a marker that the top one
    // position deeper answers (TopMaskFor).
    bool deeper = false;
    size_t bytes() const { return (allowed.size() + dependent.size()) * 4 + 256; }
  };
  // `key`: a stack's top positions, ended by kWholeStack when they are the whole stack.
  std::shared_ptr<const TopMask> MakeTopMask(const Stack& key, const TokenVocabulary& vocab) const;
  // The kept mask of `key` (made on first use); null once the kept masks hold
  // kMaxTopMaskBytes or for a vocabulary other than the one they are for.
  std::shared_ptr<const TopMask> TopMaskOf(const Stack& key, const TokenVocabulary& vocab) const;
  // The kept mask that answers for non-empty stack `st`: its fewest top positions whose
  // mask is not a `deeper` marker; `frames` gets how many. Null as TopMaskOf.
  std::shared_ptr<const TopMask> TopMaskFor(const Stack& st, const TokenVocabulary& vocab,
                                            size_t* frames) const;

  GrammarAutomaton() = default;
  // Expands every stack until its top is a byte set (or it is empty); sorted, unique.
  // Adds to `cost` when given.
  Config Close(Config work, Cost* cost = nullptr) const;
  // The configuration after reading `byte` (empty: none).
  Config Step(const Config& from, uint8_t byte, Cost* cost = nullptr) const;
  // Compile's ambiguity probe (the header comment): InvalidArgument naming the bytes
  // after which the configuration outgrew its bounds.
  absl::Status ProbeAmbiguity() const;
  // A state's configuration (empty for an unknown state); immutable, valid for the
  // automaton's life.
  const Config& ConfigOf(int32_t state) const;
  int32_t Intern(Config stacks) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  int32_t max_states_ = kMaxStates;
  std::vector<Element> program_;  // [0] the start: a reference to root, then an end
  std::vector<ByteSet> sets_;
  std::vector<std::vector<int32_t>> alternatives_;  // per rule: first positions

  mutable absl::Mutex mu_;
  mutable std::vector<std::unique_ptr<State>> states_ ABSL_GUARDED_BY(mu_);
  mutable absl::flat_hash_map<std::string, int32_t> ids_ ABSL_GUARDED_BY(mu_);

  mutable absl::Mutex top_mu_;
  mutable uint64_t top_vocab_ ABSL_GUARDED_BY(top_mu_) = 0;  // TokenVocabulary::id()
  mutable size_t top_bytes_ ABSL_GUARDED_BY(top_mu_) = 0;
  mutable absl::flat_hash_map<Stack, std::shared_ptr<const TopMask>> top_masks_
      ABSL_GUARDED_BY(top_mu_);

  friend class GrammarBuilder;
};

}  // namespace orca
