#include "engine/tokenizer/internal/sentencepiece_tokenizer.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/common/file_util.h"
#include "engine/common/status_macros.h"
#include "engine/tokenizer/internal/tokenizer_config.h"
#include "engine/tokenizer/internal/unicode.h"

namespace orca::tokenizer_internal {

absl::StatusOr<std::unique_ptr<Tokenizer>> SentencePieceTokenizer::Load(const std::string& dir) {
  const std::string file = JoinPath(dir, "tokenizer.model");
  if (!FileExists(file)) return absl::NotFoundError(absl::StrCat(file, ": file not found"));
  std::string error;
  std::unique_ptr<SentencePieceBridge> sp = SentencePieceBridge::Load(file, &error);
  if (sp == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": not a SentencePiece model: ", error));
  }
  ORCA_ASSIGN_OR_RETURN(const TokenizerConfig config, LoadTokenizerConfig(dir));
  std::unique_ptr<SentencePieceTokenizer> t(new SentencePieceTokenizer(std::move(sp)));

  std::vector<AddedToken> specials;
  for (int id = 0; id < t->sp_->vocab_size(); ++id) {
    if (!t->sp_->IsControl(id) && !t->sp_->IsUnknown(id)) continue;
    t->special_ids_.insert(id);
    AddedToken token;
    token.id = id;
    token.content = t->sp_->IdToPiece(id);
    token.special = true;
    specials.push_back(std::move(token));
  }
  t->special_matcher_ = AddedTokenMatcher(specials);

  auto resolve = [&](const std::optional<std::string>& text, int fallback) {
    std::optional<int32_t> id;
    if (text.has_value()) {
      const int found = t->sp_->PieceToId(*text);
      if (found >= 0) id = found;
    } else if (fallback >= 0) {
      id = fallback;
    }
    if (id.has_value()) t->special_ids_.insert(*id);
    return id;
  };
  t->bos_id_ = resolve(config.bos_token, t->sp_->bos_id());
  t->eos_id_ = resolve(config.eos_token, t->sp_->eos_id());
  t->add_bos_ = config.add_bos_token.value_or(true);
  t->add_eos_ = config.add_eos_token.value_or(false);
  t->chat_template_ = config.chat_template;
  return std::unique_ptr<Tokenizer>(std::move(t));
}

std::vector<int32_t> SentencePieceTokenizer::Encode(std::string_view text,
                                                    bool add_special_tokens) const {
  std::vector<int32_t> ids;
  if (add_special_tokens && add_bos_ && bos_id_.has_value()) ids.push_back(*bos_id_);
  for (const Segment& segment : special_matcher_.Split(text)) {
    if (segment.added_id >= 0) {
      ids.push_back(segment.added_id);
      continue;
    }
    for (int id : sp_->Encode(segment.text)) ids.push_back(id);
  }
  if (add_special_tokens && add_eos_ && eos_id_.has_value()) ids.push_back(*eos_id_);
  return ids;
}

std::string SentencePieceTokenizer::Decode(absl::Span<const int32_t> ids,
                                           bool skip_special_tokens) const {
  std::string text;
  std::vector<int> run;
  auto flush = [&] {
    if (!run.empty()) text += sp_->Decode(run);
    run.clear();
  };
  for (int32_t id : ids) {
    if (id < 0 || id >= sp_->vocab_size()) continue;
    if (IsSpecial(id)) {
      if (skip_special_tokens) continue;
      flush();
      text += sp_->IdToPiece(id);
      continue;
    }
    run.push_back(id);
  }
  flush();
  return ToValidUtf8(text);
}

std::optional<int32_t> SentencePieceTokenizer::TokenToId(std::string_view token) const {
  const int id = sp_->PieceToId(token);
  if (id < 0) return std::nullopt;
  return id;
}

std::string SentencePieceTokenizer::IdToToken(int32_t id) const {
  if (id < 0 || id >= sp_->vocab_size()) return "";
  return sp_->IdToPiece(id);
}

}  // namespace orca::tokenizer_internal
