#include "engine/tokenizer/internal/hf_tokenizer.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/common/file_util.h"
#include "engine/common/status_macros.h"
#include "engine/tokenizer/internal/absl_compat.h"
#include "engine/tokenizer/internal/json_file.h"
#include "engine/tokenizer/internal/tokenizer_config.h"

namespace orca::tokenizer_internal {
namespace {

using nlohmann::json;

absl::Status Malformed(const std::string& file, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(file, ": ", what));
}

// Ids are bounded so that vocab_size() and per-id tables stay reasonable.
bool IsValidId(const json& id) {
  return id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() < (1 << 30);
}

absl::StatusOr<std::vector<AddedToken>> ParseAddedTokens(const json& root,
                                                         const std::string& file) {
  std::vector<AddedToken> tokens;
  if (!root.contains("added_tokens") || root["added_tokens"].is_null()) return tokens;
  const json& list = root["added_tokens"];
  if (!list.is_array()) return Malformed(file, "added_tokens is not an array");
  for (size_t i = 0; i < list.size(); ++i) {
    const json& entry = list[i];
    if (!entry.is_object() || !entry.contains("id") || !IsValidId(entry["id"]) ||
        !entry.contains("content") || !entry["content"].is_string()) {
      return Malformed(file, absl::StrCat("added_tokens[", i, "] needs an id and a content"));
    }
    auto flag = [&](const char* key) {
      return entry.contains(key) && entry[key].is_boolean() && entry[key].get<bool>();
    };
    AddedToken t;
    t.id = entry["id"].get<int32_t>();
    t.content = entry["content"].get<std::string>();
    t.special = flag("special");
    t.lstrip = flag("lstrip");
    t.rstrip = flag("rstrip");
    t.single_word = flag("single_word");
    tokens.push_back(std::move(t));
  }
  return tokens;
}

// The ids the post-processor puts around a single sequence.
struct Template {
  std::vector<int32_t> prefix;
  std::vector<int32_t> suffix;
};

absl::Status AddPostProcessor(const json& config, const std::string& file, Template* t) {
  if (config.is_null()) return absl::OkStatus();
  if (!config.is_object() || !config.contains("type") || !config["type"].is_string()) {
    return Malformed(file, "post_processor: expected an object with a \"type\"");
  }
  const std::string type = config["type"].get<std::string>();
  if (type == "Sequence") {
    if (!config.contains("processors") || !config["processors"].is_array()) {
      return Malformed(file, "post_processor: Sequence without a \"processors\" array");
    }
    for (const json& child : config["processors"]) {
      ORCA_RETURN_IF_ERROR(AddPostProcessor(child, file, t));
    }
    return absl::OkStatus();
  }
  if (type == "ByteLevel") return absl::OkStatus();  // only adjusts offsets
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    // "cls": ["<s>", 0], "sep": ["</s>", 2]
    for (const char* key : {"cls", "sep"}) {
      if (!config.contains(key) || !config[key].is_array() || config[key].size() != 2 ||
          !IsValidId(config[key][1])) {
        return Malformed(
            file, absl::StrCat("post_processor: ", type, " needs \"", key, "\": [token, id]"));
      }
    }
    t->prefix.push_back(config["cls"][1].get<int32_t>());
    t->suffix.push_back(config["sep"][1].get<int32_t>());
    return absl::OkStatus();
  }
  if (type != "TemplateProcessing") {
    return absl::UnimplementedError(
        absl::StrCat(file, ": post_processor type \"", type, "\" is not supported"));
  }
  if (!config.contains("single") || !config["single"].is_array()) {
    return Malformed(file, "post_processor: TemplateProcessing without a \"single\" array");
  }
  bool seen_sequence = false;
  for (const json& piece : config["single"]) {
    if (piece.is_object() && piece.contains("Sequence")) {
      seen_sequence = true;
      continue;
    }
    if (!piece.is_object() || !piece.contains("SpecialToken") ||
        !piece["SpecialToken"].contains("id") || !piece["SpecialToken"]["id"].is_string()) {
      return Malformed(file, "post_processor: template piece is neither Sequence nor SpecialToken");
    }
    const std::string name = piece["SpecialToken"]["id"].get<std::string>();
    if (!config.contains("special_tokens") || !config["special_tokens"].contains(name) ||
        !config["special_tokens"][name].contains("ids") ||
        !config["special_tokens"][name]["ids"].is_array()) {
      return Malformed(file, absl::StrCat("post_processor: special token \"", name,
                                          "\" has no entry in special_tokens"));
    }
    for (const json& id : config["special_tokens"][name]["ids"]) {
      if (!IsValidId(id)) return Malformed(file, "post_processor: invalid token id");
      (seen_sequence ? t->suffix : t->prefix).push_back(id.get<int32_t>());
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> HfTokenizer::Load(const std::string& dir) {
  const std::string file = JoinPath(dir, "tokenizer.json");
  ORCA_ASSIGN_OR_RETURN(const json root, ReadJsonFile(file));
  ORCA_ASSIGN_OR_RETURN(const TokenizerConfig config, LoadTokenizerConfig(dir));
  std::unique_ptr<HfTokenizer> t;
  Template tmpl;
  std::vector<AddedToken> added;
  // Every access below checks types first; the catch is a backstop that keeps a library
  // exception from crossing the module boundary.
  try {
    if (!root.is_object()) return Malformed(file, "the top level is not an object");
    if (!root.contains("model") || !root["model"].is_object()) {
      return Malformed(file, "\"model\" is missing or not an object");
    }
    const json& model = root["model"];
    std::string type = model.contains("type") && model["type"].is_string()
                           ? model["type"].get<std::string>()
                           : (model.contains("merges") ? "BPE" : "");
    if (type != "BPE") {
      return absl::UnimplementedError(
          absl::StrCat(file, ": model type \"", type, "\" is not supported (orca supports BPE)"));
    }
    auto field = [&](const char* key) { return root.contains(key) ? root[key] : json(); };
    ORCA_ASSIGN_OR_RETURN(BpeModel bpe, BpeModel::FromJson(model, file));
    ORCA_ASSIGN_OR_RETURN(Normalizer normalizer, Normalizer::FromJson(field("normalizer"), file));
    ORCA_ASSIGN_OR_RETURN(PreTokenizer pre_tokenizer,
                          PreTokenizer::FromJson(field("pre_tokenizer"), file));
    ORCA_ASSIGN_OR_RETURN(Decoder decoder, Decoder::FromJson(field("decoder"), file));
    ORCA_ASSIGN_OR_RETURN(added, ParseAddedTokens(root, file));
    ORCA_RETURN_IF_ERROR(AddPostProcessor(field("post_processor"), file, &tmpl));
    t.reset(new HfTokenizer(std::move(bpe), std::move(normalizer), std::move(pre_tokenizer),
                            std::move(decoder)));
  } catch (const json::exception& e) {
    return Malformed(file, e.what());
  }

  t->vocab_size_ = t->model_.vocab_size();
  for (const AddedToken& a : added) {
    t->added_by_content_[a.content] = a.id;
    t->added_by_id_[a.id] = a.content;
    if (a.special) t->special_ids_.insert(a.id);
    t->vocab_size_ = std::max(t->vocab_size_, a.id + 1);
  }
  t->added_matcher_ = AddedTokenMatcher(added);
  for (int32_t id : tmpl.prefix) t->vocab_size_ = std::max(t->vocab_size_, id + 1);
  for (int32_t id : tmpl.suffix) t->vocab_size_ = std::max(t->vocab_size_, id + 1);

  if (config.bos_token.has_value()) {
    t->bos_id_ = t->TokenToId(*config.bos_token);
  } else if (!tmpl.prefix.empty()) {
    t->bos_id_ = tmpl.prefix.front();
  }
  if (config.eos_token.has_value()) {
    t->eos_id_ = t->TokenToId(*config.eos_token);
  } else if (!tmpl.suffix.empty()) {
    t->eos_id_ = tmpl.suffix.back();
  }
  // tokenizer_config.json's add_bos_token / add_eos_token, when present, override the
  // post-processor (as transformers' Llama tokenizers rebuild their template from them).
  t->prefix_ids_ = tmpl.prefix;
  if (config.add_bos_token.has_value()) {
    t->prefix_ids_.clear();
    if (*config.add_bos_token && t->bos_id_.has_value()) t->prefix_ids_.push_back(*t->bos_id_);
  }
  t->suffix_ids_ = tmpl.suffix;
  if (config.add_eos_token.has_value()) {
    t->suffix_ids_.clear();
    if (*config.add_eos_token && t->eos_id_.has_value()) t->suffix_ids_.push_back(*t->eos_id_);
  }
  if (t->bos_id_.has_value()) t->special_ids_.insert(*t->bos_id_);
  if (t->eos_id_.has_value()) t->special_ids_.insert(*t->eos_id_);
  t->chat_template_ = config.chat_template;
  return std::unique_ptr<Tokenizer>(std::move(t));
}

std::vector<int32_t> HfTokenizer::Encode(std::string_view text, bool add_special_tokens) const {
  std::vector<int32_t> ids;
  if (add_special_tokens) ids = prefix_ids_;
  for (const Segment& segment : added_matcher_.Split(text)) {
    if (segment.added_id >= 0) {
      ids.push_back(segment.added_id);
      continue;
    }
    const std::string normalized = normalizer_.Apply(segment.text);
    for (const std::string& word : pre_tokenizer_.Apply(normalized, segment.offset == 0)) {
      model_.EncodeWord(word, &ids);
    }
  }
  if (add_special_tokens) ids.insert(ids.end(), suffix_ids_.begin(), suffix_ids_.end());
  return ids;
}

const std::string* HfTokenizer::TokenString(int32_t id) const {
  if (auto it = added_by_id_.find(id); it != added_by_id_.end()) return &it->second;
  return model_.IdToToken(id);
}

std::string HfTokenizer::Decode(absl::Span<const int32_t> ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (skip_special_tokens && IsSpecial(id)) continue;
    if (const std::string* token = TokenString(id)) tokens.push_back(*token);
  }
  return decoder_.Decode(std::move(tokens));
}

std::string HfTokenizer::DecodeBytes(absl::Span<const int32_t> ids) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (IsSpecial(id)) continue;
    if (const std::string* token = TokenString(id)) tokens.push_back(*token);
  }
  return decoder_.Decode(std::move(tokens), /*repair=*/false);
}

std::optional<int32_t> HfTokenizer::TokenToId(std::string_view token) const {
  if (auto it = added_by_content_.find(ToAbsl(token)); it != added_by_content_.end())
    return it->second;
  return model_.TokenToId(token);
}

std::string HfTokenizer::IdToToken(int32_t id) const {
  const std::string* token = TokenString(id);
  return token == nullptr ? std::string() : *token;
}

}  // namespace orca::tokenizer_internal
