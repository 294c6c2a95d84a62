#include "engine/tokenizer/internal/sentencepiece_bridge.h"

#include <sentencepiece_processor.h>

namespace orca::tokenizer_internal {

std::unique_ptr<SentencePieceBridge> SentencePieceBridge::Load(const std::string& path,
                                                               std::string* error) {
  auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
  const sentencepiece::util::Status status = sp->Load(path);
  if (!status.ok()) {
    *error = status.ToString();
    return nullptr;
  }
  return std::unique_ptr<SentencePieceBridge>(new SentencePieceBridge(std::move(sp)));
}

SentencePieceBridge::SentencePieceBridge(std::unique_ptr<sentencepiece::SentencePieceProcessor> sp)
    : sp_(std::move(sp)) {}
SentencePieceBridge::~SentencePieceBridge() = default;

std::vector<int> SentencePieceBridge::Encode(std::string_view text) const {
  std::vector<int> ids;
  if (!sp_->Encode(text, &ids).ok()) ids.clear();
  return ids;
}

std::string SentencePieceBridge::Decode(const std::vector<int>& ids) const {
  std::string text;
  if (!sp_->Decode(ids, &text).ok()) text.clear();
  return text;
}

int SentencePieceBridge::vocab_size() const { return sp_->GetPieceSize(); }
int SentencePieceBridge::bos_id() const { return sp_->bos_id(); }
int SentencePieceBridge::eos_id() const { return sp_->eos_id(); }
int SentencePieceBridge::unk_id() const { return sp_->unk_id(); }
bool SentencePieceBridge::IsControl(int id) const { return sp_->IsControl(id); }
bool SentencePieceBridge::IsUnknown(int id) const { return sp_->IsUnknown(id); }
std::string SentencePieceBridge::IdToPiece(int id) const { return sp_->IdToPiece(id); }

int SentencePieceBridge::PieceToId(std::string_view piece) const {
  const int id = sp_->PieceToId(piece);
  // SentencePiece answers unk_id for unknown pieces; tell them apart.
  if (id == sp_->unk_id() && sp_->IdToPiece(id) != piece) return -1;
  return id;
}

}  // namespace orca::tokenizer_internal
