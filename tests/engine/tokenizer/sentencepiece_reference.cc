#include "tests/engine/tokenizer/sentencepiece_reference.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

namespace orca::tokenizer_test {
namespace {

class VectorIterator : public sentencepiece::SentenceIterator {
 public:
  explicit VectorIterator(const std::vector<std::string>& sentences) : sentences_(sentences) {}
  bool done() const override { return index_ >= sentences_.size(); }
  void Next() override { ++index_; }
  const std::string& value() const override { return sentences_[index_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  const std::vector<std::string>& sentences_;
  size_t index_ = 0;
};

}  // namespace

std::unique_ptr<SentencePieceReference> SentencePieceReference::Load(const std::string& path,
                                                                     std::string* error) {
  auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
  const sentencepiece::util::Status status = sp->Load(path);
  if (!status.ok()) {
    *error = status.ToString();
    return nullptr;
  }
  return std::unique_ptr<SentencePieceReference>(new SentencePieceReference(std::move(sp)));
}

std::unique_ptr<SentencePieceReference> SentencePieceReference::FromBytes(const std::string& model,
                                                                          std::string* error) {
  auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
  const sentencepiece::util::Status status = sp->LoadFromSerializedProto(model);
  if (!status.ok()) {
    *error = status.ToString();
    return nullptr;
  }
  return std::unique_ptr<SentencePieceReference>(new SentencePieceReference(std::move(sp)));
}

SentencePieceReference::SentencePieceReference(
    std::unique_ptr<sentencepiece::SentencePieceProcessor> sp)
    : sp_(std::move(sp)) {}
SentencePieceReference::~SentencePieceReference() = default;

std::vector<int> SentencePieceReference::Encode(std::string_view text) const {
  std::vector<int> ids;
  if (!sp_->Encode(text, &ids).ok()) ids.clear();
  return ids;
}

std::string SentencePieceReference::Decode(const std::vector<int>& ids) const {
  std::string text;
  if (!sp_->Decode(ids, &text).ok()) text.clear();
  return text;
}

int SentencePieceReference::vocab_size() const { return sp_->GetPieceSize(); }
int SentencePieceReference::bos_id() const { return sp_->bos_id(); }
int SentencePieceReference::eos_id() const { return sp_->eos_id(); }
int SentencePieceReference::unk_id() const { return sp_->unk_id(); }
bool SentencePieceReference::IsControl(int id) const { return sp_->IsControl(id); }
bool SentencePieceReference::IsUnknown(int id) const { return sp_->IsUnknown(id); }
bool SentencePieceReference::IsByte(int id) const { return sp_->IsByte(id); }
std::string SentencePieceReference::IdToPiece(int id) const { return sp_->IdToPiece(id); }

int SentencePieceReference::PieceToId(std::string_view piece) const {
  const int id = sp_->PieceToId(piece);
  // SentencePiece answers unk_id for unknown pieces; tell them apart.
  if (id == sp_->unk_id() && sp_->IdToPiece(id) != piece) return -1;
  return id;
}

std::string TrainSentencePieceModel(const std::string& args,
                                    const std::vector<std::string>& sentences, std::string* error) {
  VectorIterator it(sentences);
  std::string model;
  const sentencepiece::util::Status status =
      sentencepiece::SentencePieceTrainer::Train(args, &it, &model);
  if (!status.ok()) {
    *error = status.ToString();
    return "";
  }
  return model;
}

}  // namespace orca::tokenizer_test
