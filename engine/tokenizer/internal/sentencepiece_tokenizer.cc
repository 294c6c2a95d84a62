#include "engine/tokenizer/internal/sentencepiece_tokenizer.h"

#include <filesystem>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/common/file_util.h"
#include "engine/common/status_macros.h"
#include "engine/tokenizer/internal/sentencepiece_model_proto.h"
#include "engine/tokenizer/internal/unicode.h"

namespace orca::tokenizer_internal {
namespace {

// Real models are a few MB (Llama 2: 0.5 MB, Gemma 3: 4.5 MB); refuse to read absurd files.
constexpr uintmax_t kMaxModelBytes = uintmax_t{256} << 20;

using PieceType = SentencePieceModelProto::PieceType;

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> SentencePieceTokenizer::Load(const std::string& dir) {
  const std::string file = JoinPath(dir, "tokenizer.model");
  if (!FileExists(file)) return absl::NotFoundError(absl::StrCat(file, ": file not found"));
  std::error_code error;
  const uintmax_t size = std::filesystem::file_size(file, error);
  if (!error && size > kMaxModelBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": ", size, " bytes is too large for a SentencePiece model (limit ",
                     kMaxModelBytes, ")"));
  }
  ORCA_ASSIGN_OR_RETURN(const std::string bytes, ReadFile(file));
  ORCA_ASSIGN_OR_RETURN(const TokenizerConfig config, LoadTokenizerConfig(dir));
  return Create(bytes, file, config);
}

absl::StatusOr<std::unique_ptr<Tokenizer>> SentencePieceTokenizer::Create(
    std::string_view model, const std::string& file, const TokenizerConfig& config) {
  ORCA_ASSIGN_OR_RETURN(SentencePieceModelProto proto, ParseSentencePieceModelProto(model, file));
  ORCA_ASSIGN_OR_RETURN(SentencePieceBpe bpe, SentencePieceBpe::Create(std::move(proto), file));
  std::unique_ptr<SentencePieceTokenizer> t(new SentencePieceTokenizer(std::move(bpe)));
  const SentencePieceBpe& m = t->model_;

  std::vector<AddedToken> specials;
  for (int32_t id = 0; id < m.vocab_size(); ++id) {
    if (m.type(id) != PieceType::kControl && m.type(id) != PieceType::kUnknown) continue;
    t->special_ids_.insert(id);
    AddedToken token;
    token.id = id;
    token.content = m.piece(id);
    token.special = true;
    specials.push_back(std::move(token));
  }
  t->special_matcher_ = AddedTokenMatcher(specials);

  auto resolve = [&](const std::optional<std::string>& text, std::optional<int32_t> fallback) {
    const std::optional<int32_t> id = text.has_value() ? m.PieceToId(*text) : fallback;
    if (id.has_value()) t->special_ids_.insert(*id);
    return id;
  };
  t->bos_id_ = resolve(config.bos_token, m.bos_id());
  t->eos_id_ = resolve(config.eos_token, m.eos_id());
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
    model_.Encode(segment.text, &ids);
  }
  if (add_special_tokens && add_eos_ && eos_id_.has_value()) ids.push_back(*eos_id_);
  return ids;
}

std::string SentencePieceTokenizer::Decode(absl::Span<const int32_t> ids,
                                           bool skip_special_tokens) const {
  std::string text = ToValidUtf8(DecodeRaw(ids, skip_special_tokens));
  return model_.has_denormalizer() ? ToValidUtf8(model_.Denormalize(std::move(text))) : text;
}

std::string SentencePieceTokenizer::DecodeBytes(absl::Span<const int32_t> ids) const {
  std::string text = DecodeRaw(ids, /*skip_special_tokens=*/true);
  return model_.has_denormalizer() ? model_.Denormalize(std::move(text)) : text;
}

std::string SentencePieceTokenizer::DecodeRaw(absl::Span<const int32_t> ids,
                                              bool skip_special_tokens) const {
  std::string text;  // raw bytes; Decode repairs them
  // SentencePieceProcessor::Decode's state: may the next piece still lose its leading
  // U+2581, and did the previous piece lose one.
  bool is_bos_ws = true;
  bool bos_ws_seen = false;
  for (int32_t id : ids) {
    if (id < 0 || id >= model_.vocab_size()) continue;
    const bool special = IsSpecial(id);
    if (const int byte = model_.byte_value(id); byte >= 0 && !special) {
      text.push_back(static_cast<char>(byte));
      continue;
    }
    if (bos_ws_seen || !text.empty()) is_bos_ws = false;
    bos_ws_seen = false;
    std::string_view piece = model_.piece(id);
    if (special) {
      if (!skip_special_tokens) text += piece;
      continue;
    }
    if (is_bos_ws && model_.strip_leading_space() && piece.starts_with(kSpaceSymbol)) {
      piece.remove_prefix(kSpaceSymbol.size());
      // With remove_extra_whitespaces every leading space goes: the state stays "first".
      bos_ws_seen = !model_.remove_extra_whitespaces();
    }
    for (size_t pos = 0; pos < piece.size();) {
      if (piece.substr(pos).starts_with(kSpaceSymbol)) {
        text.push_back(' ');
        pos += kSpaceSymbol.size();
      } else {
        text.push_back(piece[pos++]);
      }
    }
  }
  return text;
}

std::optional<int32_t> SentencePieceTokenizer::TokenToId(std::string_view token) const {
  return model_.PieceToId(token);
}

std::string SentencePieceTokenizer::IdToToken(int32_t id) const {
  if (id < 0 || id >= model_.vocab_size()) return "";
  return model_.piece(id);
}

}  // namespace orca::tokenizer_internal
