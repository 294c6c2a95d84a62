#include "engine/guided/token_guide.h"

#include <algorithm>
#include <atomic>

#include "engine/guided/byte_dfa.h"
#include "engine/guided/grammar_automaton.h"
#include "engine/guided/json_schema.h"

namespace orca {

TokenVocabulary::TokenVocabulary(std::vector<std::string> bytes) : bytes_(std::move(bytes)) {
  // Built linked, then laid out flat (token_guide.h).
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> children;  // sorted by byte
    std::vector<int32_t> tokens;
  };
  std::vector<Node> nodes(1);
  for (int32_t id = 0; id < size(); ++id) {
    const std::string& b = bytes_[static_cast<size_t>(id)];
    if (b.empty()) continue;
    int32_t node = 0;
    for (char c : b) {
      const auto byte = static_cast<uint8_t>(c);
      auto& kids = nodes[static_cast<size_t>(node)].children;
      auto it = std::lower_bound(kids.begin(), kids.end(), std::make_pair(byte, int32_t{-1}));
      if (it != kids.end() && it->first == byte) {
        node = it->second;
        continue;
      }
      const auto child = static_cast<int32_t>(nodes.size());
      kids.insert(it, {byte, child});
      nodes.emplace_back();  // (kids is not used after this)
      node = child;
    }
    nodes[static_cast<size_t>(node)].tokens.push_back(id);
  }
  // Numbered in the order a depth-first walk (children in byte order) meets them, which
  // also lays each subtree's tokens side by side in in_trie_order_.
  std::vector<int32_t> number(nodes.size()), preorder;
  // By linked node: first, own_end and end (the children's ranges are set below).
  std::vector<TrieNode> ranges(nodes.size());
  std::vector<std::pair<int32_t, bool>> stack = {{0, false}};  // linked node, children done
  while (!stack.empty()) {
    const auto [node, done] = stack.back();
    stack.pop_back();
    const Node& n = nodes[static_cast<size_t>(node)];
    TrieNode& r = ranges[static_cast<size_t>(node)];
    if (done) {
      r.end = static_cast<int32_t>(in_trie_order_.size());
      continue;
    }
    number[static_cast<size_t>(node)] = static_cast<int32_t>(preorder.size());
    preorder.push_back(node);
    r.first = static_cast<int32_t>(in_trie_order_.size());
    in_trie_order_.insert(in_trie_order_.end(), n.tokens.begin(), n.tokens.end());
    r.own_end = static_cast<int32_t>(in_trie_order_.size());
    stack.emplace_back(node, true);
    for (size_t i = n.children.size(); i-- > 0;) stack.emplace_back(n.children[i].second, false);
  }
  trie_.reserve(preorder.size());
  for (int32_t node : preorder) {
    TrieNode flat = ranges[static_cast<size_t>(node)];
    flat.children_begin = static_cast<int32_t>(child_bytes_.size());
    for (const auto& [byte, child] : nodes[static_cast<size_t>(node)].children) {
      child_bytes_.push_back(byte);
      child_nodes_.push_back(number[static_cast<size_t>(child)]);
    }
    flat.children_end = static_cast<int32_t>(child_bytes_.size());
    trie_.push_back(flat);
  }
  static std::atomic<uint64_t> next_id{1};
  id_ = next_id.fetch_add(1);
}

std::shared_ptr<const TokenVocabulary> TokenVocabulary::FromTokenizer(const Tokenizer& tokenizer) {
  // Decoding after an anchor token keeps a token's leading space (SentencePiece drops it
  // at the start of a text); the anchor's own bytes are cut off again.
  const std::vector<int32_t> a = tokenizer.Encode("a", /*add_special_tokens=*/false);
  const std::vector<int32_t> anchor = a.empty() ? std::vector<int32_t>{} : std::vector{a.back()};
  const std::string prefix = tokenizer.DecodeBytes(anchor);
  std::vector<std::string> bytes(static_cast<size_t>(tokenizer.vocab_size()));
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
    if (tokenizer.IsSpecial(id)) continue;
    std::vector<int32_t> ids = anchor;
    ids.push_back(id);
    std::string both = tokenizer.DecodeBytes(ids);
    bytes[static_cast<size_t>(id)] = both.starts_with(prefix)
                                         ? both.substr(prefix.size())
                                         : tokenizer.DecodeBytes(std::vector<int32_t>{id});
  }
  return std::make_shared<const TokenVocabulary>(std::move(bytes));
}

absl::StatusOr<std::shared_ptr<const TokenGuide>> TokenGuide::Create(
    std::string_view pattern, std::shared_ptr<const TokenVocabulary> vocab, GuideSyntax syntax) {
  std::unique_ptr<const ByteAutomaton> automaton;
  if (syntax == GuideSyntax::kGbnf) {
    absl::StatusOr<std::unique_ptr<const GrammarAutomaton>> g = GrammarAutomaton::Compile(pattern);
    if (!g.ok()) return g.status();
    automaton = *std::move(g);
  } else if (syntax == GuideSyntax::kJsonSchema) {
    const nlohmann::ordered_json schema = nlohmann::ordered_json::parse(pattern, nullptr, false);
    if (schema.is_discarded()) return absl::InvalidArgumentError("json schema: not JSON");
    absl::StatusOr<GbnfRules> rules = JsonSchemaToGrammar(schema);
    if (!rules.ok()) return rules.status();
    absl::StatusOr<std::unique_ptr<const GrammarAutomaton>> g = GrammarAutomaton::Compile(*rules);
    if (!g.ok()) return g.status();
    automaton = *std::move(g);
  } else {
    absl::StatusOr<ByteDfa> dfa = ByteDfa::Compile(pattern);
    if (!dfa.ok()) return dfa.status();
    automaton = std::make_unique<const ByteDfa>(*std::move(dfa));
  }
  return std::shared_ptr<const TokenGuide>(new TokenGuide(std::move(automaton), std::move(vocab)));
}

void ByteAutomaton::AllowTokens(int32_t state, const TokenVocabulary& vocab,
                                std::vector<uint32_t>& mask) const {
  FitMaskTo(vocab, mask);
  MarkReachableTokens(
      vocab, state, [&](int32_t s, uint8_t byte) { return Next(s, byte); }, mask);
}

std::shared_ptr<const std::vector<uint32_t>> TokenGuide::Mask(int32_t state) const {
  {
    absl::MutexLock lock(&mu_);
    if (auto it = masks_.find(state); it != masks_.end()) return it->second;
  }
  // Walked without the lock, so that requests at other states are not held up (two
  // walks of one state may race: they find the same mask, and the first one is kept).
  auto mask = std::make_shared<std::vector<uint32_t>>((vocab_->size() + 31) / 32, 0u);
  automaton_->AllowTokens(state, *vocab_, *mask);
  absl::MutexLock lock(&mu_);
  if (masks_.size() >= kMaxMasks) masks_.clear();
  return masks_.try_emplace(state, std::move(mask)).first->second;
}

int32_t TokenGuide::Next(int32_t state, int32_t token) const {
  if (state == kDead || token < 0 || token >= vocab_->size()) return kDead;
  const std::string& b = vocab_->bytes(token);
  if (b.empty()) return kDead;
  return automaton_->Walk(state, b);
}

absl::StatusOr<std::shared_ptr<const TokenGuide>> GuideCache::Get(const std::string& pattern,
                                                                  GuideSyntax syntax) {
  {
    absl::MutexLock lock(&mu_);
    for (auto it = lru_.begin(); it != lru_.end(); ++it) {
      if (it->syntax != syntax || it->pattern != pattern) continue;
      if (it->guide->exhausted()) {  // (its requests keep it; later ones get a fresh one)
        lru_.erase(it);
        break;
      }
      lru_.splice(lru_.begin(), lru_, it);
      return lru_.front().guide;
    }
  }
  // Compiled outside the lock: a large pattern must not hold up other requests.
  absl::StatusOr<std::shared_ptr<const TokenGuide>> guide =
      TokenGuide::Create(pattern, vocab_, syntax);
  if (!guide.ok()) return guide.status();
  absl::MutexLock lock(&mu_);
  lru_.push_front(Entry{syntax, pattern, *guide});
  if (lru_.size() > capacity_) lru_.pop_back();
  return *guide;
}

}  // namespace orca
