// Guided decoding at the token level: which tokens of a vocabulary may come next so
// that the output can still match a pattern (engine/guided/byte_dfa.h), as a bitmask
// the sampler applies to the logits before it samples.
//
// TokenVocabulary holds every token's bytes (what it adds to the output mid-sequence;
// special tokens none) and a trie of them, built once per tokenizer. TokenGuide is a
// compiled pattern (a regular expression, byte_dfa.h, or a GBNF grammar,
// grammar_automaton.h) over one vocabulary: a state is the automaton's state after the
// output so far; Mask(state) is computed the first time the state is reached, by one
// walk of the trie that follows the automaton and drops every subtree it cannot
// continue (O(trie nodes the pattern can reach), not O(vocabulary x token length)),
// and kept (up to kMaxMasks). GuideCache compiles a pattern once and hands the same guide to every
// request that asks for it. All three are thread-safe.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "engine/guided/byte_automaton.h"
#include "engine/guided/guide_spec.h"
#include "engine/tokenizer/tokenizer.h"

namespace orca {

class TokenVocabulary {
 public:
  // `bytes[id]`: the bytes token `id` adds to the output ("" = never allowed).
  explicit TokenVocabulary(std::vector<std::string> bytes);
  // Every token's bytes as `tokenizer` decodes it after another token (so that
  // SentencePiece's leading-space rule does not apply), raw (a token holding part of a
  // UTF-8 character keeps its bytes); special tokens get none.
  static std::shared_ptr<const TokenVocabulary> FromTokenizer(const Tokenizer& tokenizer);

  int32_t size() const { return static_cast<int32_t>(bytes_.size()); }
  const std::string& bytes(int32_t id) const { return bytes_[static_cast<size_t>(id)]; }

  // The trie of the tokens' bytes, flat and numbered depth first (children in byte
  // order), so that a walk reads it front to back: node 0 is the root (the empty
  // string); a node's children are child_bytes()/child_nodes()[children_begin,
  // children_end), sorted by byte; the tokens whose bytes end at it are
  // in_trie_order()[first, own_end), and those of its whole subtree [first, end).
  struct TrieNode {
    int32_t children_begin = 0, children_end = 0;
    int32_t first = 0, own_end = 0, end = 0;
  };
  const std::vector<TrieNode>& trie() const { return trie_; }
  const std::vector<uint8_t>& child_bytes() const { return child_bytes_; }
  const std::vector<int32_t>& child_nodes() const { return child_nodes_; }
  // Every token with bytes, in the trie's depth-first order: sorted by bytes, a prefix
  // before what extends it.
  const std::vector<int32_t>& in_trie_order() const { return in_trie_order_; }
  // Different for every vocabulary made in this process (what a kept mask is for).
  uint64_t id() const { return id_; }

 private:
  std::vector<std::string> bytes_;
  std::vector<TrieNode> trie_;
  std::vector<uint8_t> child_bytes_;
  std::vector<int32_t> child_nodes_;
  std::vector<int32_t> in_trie_order_;
  uint64_t id_;
};

// Grows `mask` to `vocab`'s ceil(size / 32) words when it is shorter (what every
// AllowTokens does first, so that no walk writes past a caller's mask).
inline void FitMaskTo(const TokenVocabulary& vocab, std::vector<uint32_t>& mask) {
  const size_t words = (static_cast<size_t>(vocab.size()) + 31) / 32;
  if (mask.size() < words) mask.resize(words, 0u);
}

// Sets the mask bit of every token of `vocab` whose bytes lead from `start` through
// `step(state, byte)` (kDead: no way on) without dying: a depth-first walk of the trie
// that drops every subtree it cannot continue. What ByteAutomaton::AllowTokens does.
template <typename Step>
void MarkReachableTokens(const TokenVocabulary& vocab, int32_t start, Step step,
                         std::vector<uint32_t>& mask) {
  const auto& trie = vocab.trie();
  const auto& order = vocab.in_trie_order();
  const auto& bytes = vocab.child_bytes();
  const auto& kids = vocab.child_nodes();
  std::vector<std::pair<int32_t, int32_t>> stack = {{0, start}};  // trie node, state
  while (!stack.empty()) {
    const auto [node, s] = stack.back();
    stack.pop_back();
    const TokenVocabulary::TrieNode& n = trie[static_cast<size_t>(node)];
    for (int32_t i = n.first; i < n.own_end; ++i) {
      const int32_t t = order[static_cast<size_t>(i)];
      mask[static_cast<size_t>(t) / 32] |= 1u << (t % 32);
    }
    // (Pushed last child first, so that nodes are visited in the order they are stored.)
    for (int32_t c = n.children_end - 1; c >= n.children_begin; --c) {
      const int32_t next = step(s, bytes[static_cast<size_t>(c)]);
      if (next != ByteAutomaton::kDead) stack.emplace_back(kids[static_cast<size_t>(c)], next);
    }
  }
}

class TokenGuide {
 public:
  static constexpr int32_t kDead = ByteAutomaton::kDead;

  // InvalidArgument naming what the compiler refuses.
  static absl::StatusOr<std::shared_ptr<const TokenGuide>> Create(
      std::string_view pattern, std::shared_ptr<const TokenVocabulary> vocab,
      GuideSyntax syntax = GuideSyntax::kRegex);

  int32_t start() const { return automaton_->start(); }
  // The tokens allowed in `state` (each leads to a state from which a match is still
  // reachable), as bits: token t is allowed when mask[t / 32] >> (t % 32) & 1. Stop
  // tokens are not included (the caller allows them where accepting(state)). At most
  // kMaxMasks are kept (then they are computed afresh).
  std::shared_ptr<const std::vector<uint32_t>> Mask(int32_t state) const;
  // The state after `token` (kDead when the token is not allowed).
  int32_t Next(int32_t state, int32_t token) const;
  // Whether the output so far matches.
  bool accepting(int32_t state) const { return automaton_->accepting(state); }
  // Whether the output is complete: it matches and nothing more may follow.
  bool complete(int32_t state) const {
    return automaton_->accepting(state) && !automaton_->has_next(state);
  }
  int32_t vocab_size() const { return vocab_->size(); }
  // Whether the automaton can make no more states (a grammar's, after very many
  // outputs): the cache then compiles a fresh guide for later requests.
  bool exhausted() const { return automaton_->exhausted(); }

  static constexpr size_t kMaxMasks = 4096;

 private:
  TokenGuide(std::unique_ptr<const ByteAutomaton> automaton,
             std::shared_ptr<const TokenVocabulary> vocab)
      : automaton_(std::move(automaton)), vocab_(std::move(vocab)) {}

  const std::unique_ptr<const ByteAutomaton> automaton_;
  const std::shared_ptr<const TokenVocabulary> vocab_;
  mutable absl::Mutex mu_;
  // Computed masks by state (cleared when kMaxMasks are held; callers keep theirs).
  mutable absl::flat_hash_map<int32_t, std::shared_ptr<const std::vector<uint32_t>>> masks_
      ABSL_GUARDED_BY(mu_);
};

// Compiled guides by pattern, the `capacity` most recently used kept.
class GuideCache {
 public:
  GuideCache(std::shared_ptr<const TokenVocabulary> vocab, size_t capacity = 64)
      : vocab_(std::move(vocab)), capacity_(capacity) {}
  // The guide of `pattern`, compiled on first use (InvalidArgument for a pattern the
  // compiler refuses, naming what).
  absl::StatusOr<std::shared_ptr<const TokenGuide>> Get(const std::string& pattern,
                                                        GuideSyntax syntax = GuideSyntax::kRegex);

 private:
  std::shared_ptr<const TokenVocabulary> vocab_;
  const size_t capacity_;
  absl::Mutex mu_;
  struct Entry {
    GuideSyntax syntax;
    std::string pattern;
    std::shared_ptr<const TokenGuide> guide;
  };
  std::list<Entry> lru_ ABSL_GUARDED_BY(mu_);
};

}  // namespace orca
