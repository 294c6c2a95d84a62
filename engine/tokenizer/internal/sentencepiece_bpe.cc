#include "engine/tokenizer/internal/sentencepiece_bpe.h"

#include <algorithm>
#include <queue>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/common/status_macros.h"
#include "engine/tokenizer/internal/absl_compat.h"
#include "engine/tokenizer/internal/unicode.h"

namespace orca::tokenizer_internal {
namespace {

using PieceType = SentencePieceModelProto::PieceType;

bool IsMergeable(PieceType type) {
  return type == PieceType::kNormal || type == PieceType::kUserDefined ||
         type == PieceType::kUnused;
}

// libsentencepiece's string_util::OneCharLen: the length a UTF-8 lead byte announces.
size_t OneCharLen(std::string_view text) {
  static constexpr uint8_t kLengths[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return std::min<size_t>(text.size(), kLengths[static_cast<uint8_t>(text[0]) >> 4]);
}

// Quotes a piece from the (untrusted) file for an error message: escaped, at most 32 bytes.
std::string Quoted(std::string_view piece) {
  constexpr size_t kMax = 32;
  return absl::StrCat("\"", absl::CHexEscape(ToAbsl(piece.substr(0, kMax))),
                      piece.size() > kMax ? "...\"" : "\"");
}

}  // namespace

absl::StatusOr<SentencePieceBpe> SentencePieceBpe::Create(SentencePieceModelProto proto,
                                                          const std::string& file) {
  auto invalid = [&](absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": not a valid SentencePiece model: ", what));
  };
  const size_t n = proto.pieces.size();
  if (n == 0) return invalid("no pieces");
  if (proto.model_type != SentencePieceModelProto::ModelType::kBpe) {
    return absl::UnimplementedError(absl::StrCat(file, ": SentencePiece model type ",
                                                 ModelTypeName(proto.model_type),
                                                 " is not supported (orca supports BPE)"));
  }
  if (n > kMaxSentencePieces) return invalid(absl::StrCat(n, " pieces"));

  SentencePieceBpe m;
  m.byte_values_.assign(n, -1);
  m.byte_ids_.fill(-1);
  std::optional<int32_t> unk;
  std::vector<std::string_view> user_defined;
  for (size_t i = 0; i < n; ++i) {
    const auto id = static_cast<int32_t>(i);
    const SentencePieceModelProto::Piece& p = proto.pieces[i];
    if (p.piece.empty()) return invalid(absl::StrCat("pieces[", i, "] is empty"));
    auto& map = IsMergeable(p.type) ? m.mergeable_ : m.reserved_;
    if (auto [it, inserted] = map.try_emplace(p.piece, id); !inserted) {
      return invalid(absl::StrCat("pieces[", i, "] ", Quoted(p.piece), " duplicates pieces[",
                                  it->second, "]"));
    }
    switch (p.type) {
      case PieceType::kUserDefined:
        user_defined.push_back(p.piece);
        break;
      case PieceType::kUnknown:
        if (unk.has_value()) {
          return invalid(absl::StrCat("pieces[", i, "] is a second UNKNOWN piece (pieces[", *unk,
                                      "] is one)"));
        }
        unk = id;
        break;
      case PieceType::kByte: {
        if (!proto.byte_fallback) {
          return invalid(absl::StrCat("pieces[", i, "] ", Quoted(p.piece),
                                      " is a BYTE piece but trainer_spec.byte_fallback is off"));
        }
        const int byte = ParseByteToken(p.piece);
        if (byte < 0) {
          return invalid(
              absl::StrCat("pieces[", i, "] ", Quoted(p.piece), " is not a <0xNN> piece"));
        }
        m.byte_values_[i] = static_cast<int16_t>(byte);
        m.byte_ids_[byte] = id;
        break;
      }
      default:
        break;
    }
  }
  if (!unk.has_value()) return invalid("no piece of type UNKNOWN");
  m.unk_id_ = *unk;
  m.byte_fallback_ = proto.byte_fallback;
  if (m.byte_fallback_) {
    for (int b = 0; b < 256; ++b) {
      if (m.byte_ids_[b] < 0) {
        return invalid(
            absl::StrFormat("trainer_spec.byte_fallback is on but piece <0x%02X> is missing", b));
      }
    }
  }
  for (const auto& [name, value] :
       {std::pair{"unk_id", proto.unk_id}, std::pair{"bos_id", proto.bos_id},
        std::pair{"eos_id", proto.eos_id}, std::pair{"pad_id", proto.pad_id}}) {
    if (value < -1 || value >= static_cast<int64_t>(n)) {
      return invalid(absl::StrCat("trainer_spec.", name, " ", value,
                                  " is out of range for a vocabulary of ", n, " pieces"));
    }
  }
  auto control = [&](int32_t id) -> std::optional<int32_t> {
    if (id >= 0 && proto.pieces[id].type == PieceType::kControl) return id;
    return std::nullopt;
  };
  m.bos_id_ = control(proto.bos_id);
  m.eos_id_ = control(proto.eos_id);
  m.user_defined_ = PieceMatcher(user_defined);
  m.add_dummy_prefix_ = proto.normalizer.add_dummy_prefix;
  m.remove_extra_whitespaces_ = proto.normalizer.remove_extra_whitespaces;
  ORCA_ASSIGN_OR_RETURN(m.normalizer_, SentencePieceNormalizer::Create(
                                           proto.normalizer, proto.treat_whitespace_as_suffix, file,
                                           "normalizer_spec"));
  // libsentencepiece denormalizes decoded text only with a character map.
  if (proto.denormalizer.has_value() && !proto.denormalizer->precompiled_charsmap.empty()) {
    ORCA_ASSIGN_OR_RETURN(
        m.denormalizer_,
        SentencePieceNormalizer::Create(*proto.denormalizer, false, file, "denormalizer_spec"));
  }
  m.pieces_ = std::move(proto.pieces);
  return m;
}

std::optional<int32_t> SentencePieceBpe::PieceToId(std::string_view piece) const {
  if (auto it = reserved_.find(ToAbsl(piece)); it != reserved_.end()) return it->second;
  if (auto it = mergeable_.find(ToAbsl(piece)); it != mergeable_.end()) return it->second;
  return std::nullopt;
}

int32_t SentencePieceBpe::IdOrUnknown(std::string_view piece) const {
  return PieceToId(piece).value_or(unk_id_);
}

void SentencePieceBpe::Segment(std::string_view normalized,
                               std::vector<std::pair<std::string_view, int32_t>>* out) const {
  struct Symbol {
    int32_t prev;  // -1 when first
    int32_t next;  // -1 when last
    bool freeze;   // a user-defined piece: never merged
    std::string_view piece;
  };
  struct Candidate {
    float score;
    int32_t left;
    int32_t right;
    size_t size;  // of the merged piece; a mismatch marks a stale candidate
  };
  // The highest score first; among equal scores the leftmost.
  auto later = [](const Candidate& a, const Candidate& b) {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(later)> agenda(later);
  std::vector<Symbol> symbols;
  // Merged UNUSED pieces and the two pieces they were made of, to split them back.
  absl::flat_hash_map<absl::string_view, std::pair<std::string_view, std::string_view>> rev_merge;

  auto maybe_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0 || symbols[left].freeze || symbols[right].freeze) return;
    const std::string_view merged(symbols[left].piece.data(),
                                  symbols[left].piece.size() + symbols[right].piece.size());
    auto it = mergeable_.find(ToAbsl(merged));
    if (it == mergeable_.end()) return;
    agenda.push({pieces_[it->second].score, left, right, merged.size()});
    if (pieces_[it->second].type == PieceType::kUnused) {
      rev_merge[ToAbsl(merged)] = {symbols[left].piece, symbols[right].piece};
    }
  };

  while (!normalized.empty()) {
    size_t length = user_defined_.LongestPrefix(normalized);
    const bool freeze = length > 0;
    if (!freeze) length = OneCharLen(normalized);
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({index - 1, -1, freeze, normalized.substr(0, length)});
    if (index > 0) symbols[index - 1].next = index;
    normalized.remove_prefix(length);
  }
  if (symbols.empty()) return;
  for (size_t i = 1; i < symbols.size(); ++i) {
    maybe_add(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));
  }

  while (!agenda.empty()) {
    const Candidate top = agenda.top();
    agenda.pop();
    Symbol& left = symbols[top.left];
    Symbol& right = symbols[top.right];
    if (left.piece.empty() || right.piece.empty() ||
        left.piece.size() + right.piece.size() != top.size) {
      continue;
    }
    left.piece = std::string_view(left.piece.data(), top.size);
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.left;
    right.piece = {};
    maybe_add(left.prev, top.left);
    maybe_add(top.left, left.next);
  }

  // Splits UNUSED pieces back into the pieces they were merged from (iteratively: the
  // nesting depth is bounded only by the piece length).
  std::vector<std::string_view> stack;
  for (int32_t index = 0; index != -1; index = symbols[index].next) {
    stack.push_back(symbols[index].piece);
    while (!stack.empty()) {
      const std::string_view piece = stack.back();
      stack.pop_back();
      const int32_t id = IdOrUnknown(piece);
      if (pieces_[id].type == PieceType::kUnused) {
        if (auto it = rev_merge.find(ToAbsl(piece)); it != rev_merge.end()) {
          stack.push_back(it->second.second);
          stack.push_back(it->second.first);
          continue;
        }
      }
      out->emplace_back(piece, id);
    }
  }
}

void SentencePieceBpe::Encode(std::string_view text, std::vector<int32_t>* out) const {
  const std::string normalized = normalizer_.Normalize(text, &user_defined_);
  std::vector<std::pair<std::string_view, int32_t>> segments;
  Segment(normalized, &segments);
  // As SentencePieceProcessor::PopulateSentencePieceText: unknown pieces become byte
  // pieces with byte fallback, else a run of them becomes one unknown id.
  bool previous_unknown = false;
  for (const auto& [piece, id] : segments) {
    const bool unknown = pieces_[id].type == PieceType::kUnknown;
    if (unknown && byte_fallback_) {
      for (char c : piece) out->push_back(byte_ids_[static_cast<uint8_t>(c)]);
    } else if (!(unknown && previous_unknown)) {
      out->push_back(id);
    }
    previous_unknown = unknown;
  }
}

std::string SentencePieceBpe::Denormalize(std::string_view text) const {
  if (!denormalizer_.has_value()) return std::string(text);
  return denormalizer_->Normalize(text, nullptr);
}

}  // namespace orca::tokenizer_internal
