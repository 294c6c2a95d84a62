#include "engine/tokenizer/internal/bpe_model.h"

#include <queue>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/tokenizer/internal/absl_compat.h"
#include "engine/tokenizer/internal/unicode.h"

namespace orca::tokenizer_internal {
namespace {

using nlohmann::json;

absl::Status Invalid(const std::string& file, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(file, ": ", what));
}

// Reads one merge in either the "a b" string form or the ["a", "b"] array form.
absl::StatusOr<std::pair<std::string, std::string>> ParseMerge(const json& merge, size_t index,
                                                               const std::string& file) {
  if (merge.is_string()) {
    const std::string& s = merge.get_ref<const std::string&>();
    const size_t space = s.find(' ');
    if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
      return Invalid(file, absl::StrCat("model.merges[", index, "] \"", s,
                                        "\" is not two tokens separated by one space"));
    }
    return std::make_pair(s.substr(0, space), s.substr(space + 1));
  }
  if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
    return std::make_pair(merge[0].get<std::string>(), merge[1].get<std::string>());
  }
  return Invalid(file, absl::StrCat("model.merges[", index,
                                    "] is neither \"a b\" nor an array of two strings"));
}

}  // namespace

absl::StatusOr<BpeModel> BpeModel::FromJson(const json& model, const std::string& file) {
  BpeModel m;
  if (!model.contains("vocab") || !model["vocab"].is_object()) {
    return Invalid(file, "model.vocab is missing or not an object");
  }
  int32_t max_id = -1;
  for (const auto& [token, id_json] : model["vocab"].items()) {
    if (!id_json.is_number_integer() || id_json.get<int64_t>() < 0 ||
        id_json.get<int64_t>() > (int64_t{1} << 30)) {
      return Invalid(file, absl::StrCat("model.vocab[\"", token, "\"] is not a valid id"));
    }
    const auto id = id_json.get<int32_t>();
    m.vocab_[token] = id;
    max_id = std::max(max_id, id);
  }
  // Ids index a table; refuse vocabularies so sparse that it would be mostly holes.
  if (max_id >= 2 * static_cast<int64_t>(m.vocab_.size()) + 1024) {
    return Invalid(
        file, absl::StrCat("model.vocab has ", m.vocab_.size(), " tokens but ids up to ", max_id));
  }
  m.id_to_token_.resize(max_id + 1);
  m.has_id_.assign(max_id + 1, false);
  for (const auto& [token, id] : m.vocab_) {
    m.id_to_token_[id] = token;
    m.has_id_[id] = true;
  }

  auto optional_string = [&](const char* key) -> absl::StatusOr<std::optional<std::string>> {
    if (!model.contains(key) || model[key].is_null()) return std::optional<std::string>();
    if (!model[key].is_string())
      return Invalid(file, absl::StrCat("model.", key, " is not a string"));
    return std::optional<std::string>(model[key].get<std::string>());
  };
  auto optional_bool = [&](const char* key) -> absl::StatusOr<bool> {
    if (!model.contains(key) || model[key].is_null()) return false;
    if (!model[key].is_boolean())
      return Invalid(file, absl::StrCat("model.", key, " is not a bool"));
    return model[key].get<bool>();
  };
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    auto value = optional_string(key);
    if (!value.ok()) return value.status();
    if (value->has_value() && !(*value)->empty()) {
      return absl::UnimplementedError(
          absl::StrCat(file, ": model.", key, " is not supported by orca's BPE"));
    }
  }
  auto unk = optional_string("unk_token");
  if (!unk.ok()) return unk.status();
  if (unk->has_value()) {
    auto it = m.vocab_.find(**unk);
    // Hugging Face tolerates an unk_token outside the vocabulary until it is needed; so
    // does orca: such a model drops unknown characters.
    if (it != m.vocab_.end()) m.unk_id_ = it->second;
  }
  for (auto [key, field] :
       {std::pair{"fuse_unk", &m.fuse_unk_}, std::pair{"byte_fallback", &m.byte_fallback_},
        std::pair{"ignore_merges", &m.ignore_merges_}}) {
    auto value = optional_bool(key);
    if (!value.ok()) return value.status();
    *field = *value;
  }
  for (int b = 0; b < 256; ++b) {
    auto it = m.vocab_.find(absl::StrFormat("<0x%02X>", b));
    m.byte_ids_[b] = it == m.vocab_.end() ? -1 : it->second;
  }

  if (!model.contains("merges")) return m;  // a BPE without merges is a plain vocabulary
  const json& merges = model["merges"];
  if (!merges.is_array()) return Invalid(file, "model.merges is not an array");
  m.merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    auto pair = ParseMerge(merges[rank], rank, file);
    if (!pair.ok()) return pair.status();
    // Named references, not a structured binding: clang 14 (the thread-safety check)
    // cannot capture those in the lambda below.
    const std::string& a = pair->first;
    const std::string& b = pair->second;
    auto lookup = [&](const std::string& token) -> absl::StatusOr<int32_t> {
      auto it = m.vocab_.find(ToAbsl(token));
      if (it == m.vocab_.end()) {
        return Invalid(
            file, absl::StrCat("model.merges[", rank, "] (\"", a, "\", \"", b,
                               "\") references token \"", token, "\" missing from model.vocab"));
      }
      return it->second;
    };
    auto id_a = lookup(a);
    if (!id_a.ok()) return id_a.status();
    auto id_b = lookup(b);
    if (!id_b.ok()) return id_b.status();
    auto id_ab = lookup(a + b);
    if (!id_ab.ok()) return id_ab.status();
    // The first occurrence of a pair wins, as when Hugging Face builds its merge map.
    m.merges_.try_emplace(PairKey(*id_a, *id_b), MergeTarget{static_cast<int32_t>(rank), *id_ab});
  }
  return m;
}

std::optional<int32_t> BpeModel::TokenToId(std::string_view token) const {
  auto it = vocab_.find(ToAbsl(token));
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::IdToToken(int32_t id) const {
  if (id < 0 || id >= vocab_size() || !has_id_[id]) return nullptr;
  return &id_to_token_[id];
}

void BpeModel::EncodeWord(std::string_view word, std::vector<int32_t>* out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    if (auto it = vocab_.find(ToAbsl(word)); it != vocab_.end()) {
      out->push_back(it->second);
      return;
    }
  }
  std::vector<int32_t> symbols;
  symbols.reserve(word.size());
  bool previous_unknown = false;
  size_t pos = 0;
  while (pos < word.size()) {
    const int length = DecodeUtf8(word, pos).length;
    const std::string_view ch = word.substr(pos, length);
    pos += length;
    if (auto it = vocab_.find(ToAbsl(ch)); it != vocab_.end()) {
      symbols.push_back(it->second);
      previous_unknown = false;
      continue;
    }
    if (byte_fallback_) {
      bool all_bytes = true;
      for (char c : ch) all_bytes = all_bytes && byte_ids_[static_cast<unsigned char>(c)] >= 0;
      if (all_bytes) {
        for (char c : ch) symbols.push_back(byte_ids_[static_cast<unsigned char>(c)]);
        previous_unknown = false;
        continue;
      }
    }
    if (unk_id_.has_value()) {
      if (!(fuse_unk_ && previous_unknown)) symbols.push_back(*unk_id_);
      previous_unknown = true;
    }
  }
  ApplyMerges(&symbols);
  out->insert(out->end(), symbols.begin(), symbols.end());
}

void BpeModel::ApplyMerges(std::vector<int32_t>* symbols) const {
  const int32_t n = static_cast<int32_t>(symbols->size());
  if (n < 2 || merges_.empty()) return;
  struct Node {
    int32_t id;
    int32_t prev;
    int32_t next;  // n when last
    bool alive;
  };
  struct Candidate {
    int32_t rank;
    int32_t pos;
    int32_t merged_id;
  };
  // Lowest rank first; among equal ranks the leftmost.
  auto later = [](const Candidate& x, const Candidate& y) {
    return x.rank != y.rank ? x.rank > y.rank : x.pos > y.pos;
  };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(later)> queue(later);
  std::vector<Node> nodes(n);
  for (int32_t i = 0; i < n; ++i) nodes[i] = {(*symbols)[i], i - 1, i + 1, true};
  auto push_pair = [&](int32_t left) {
    const int32_t right = nodes[left].next;
    if (right >= n) return;
    auto it = merges_.find(PairKey(nodes[left].id, nodes[right].id));
    if (it != merges_.end()) queue.push({it->second.rank, left, it->second.merged_id});
  };
  for (int32_t i = 0; i + 1 < n; ++i) push_pair(i);

  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Node& left = nodes[top.pos];
    if (!left.alive || left.next >= n) continue;
    Node& right = nodes[left.next];
    // Skip entries made stale by an earlier merge of either symbol.
    auto it = merges_.find(PairKey(left.id, right.id));
    if (it == merges_.end() || it->second.merged_id != top.merged_id) continue;
    left.id = top.merged_id;
    right.alive = false;
    left.next = right.next;
    if (left.next < n) nodes[left.next].prev = top.pos;
    if (left.prev >= 0) push_pair(left.prev);
    push_pair(top.pos);
  }
  symbols->clear();
  for (int32_t i = 0; i < n; i = nodes[i].next) symbols->push_back(nodes[i].id);
}

}  // namespace orca::tokenizer_internal
