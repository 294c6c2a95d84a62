// libsentencepiece, the independent reference that orca's own tokenizer.model loader is
// tested against. Only test binaries link it: the library bundles its own protobuf-lite,
// which clashes with the libprotobuf that orca's gRPC server links. The interface is
// std-only because sentencepiece_processor.h declares its own absl::string_view, which
// clashes with abseil's headers: only sentencepiece_reference.cc includes it.
// Thread-safe after Load (SentencePieceProcessor's const methods are).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace orca::tokenizer_test {

class SentencePieceReference {
 public:
  // Loads the model file at `path`. On failure returns nullptr and sets `*error`.
  static std::unique_ptr<SentencePieceReference> Load(const std::string& path, std::string* error);
  // Loads a serialized ModelProto. On failure returns nullptr and sets `*error`.
  static std::unique_ptr<SentencePieceReference> FromBytes(const std::string& model,
                                                           std::string* error);
  ~SentencePieceReference();

  // Returns SentencePiece's encoding of `text` (no BOS/EOS).
  std::vector<int> Encode(std::string_view text) const;
  // Returns SentencePiece's decoding of `ids` (control ids decode to nothing).
  std::string Decode(const std::vector<int>& ids) const;

  int vocab_size() const;
  int bos_id() const;  // -1 when the model has none
  int eos_id() const;
  int unk_id() const;
  bool IsControl(int id) const;
  bool IsUnknown(int id) const;
  bool IsByte(int id) const;
  std::string IdToPiece(int id) const;
  // Returns the id of `piece`, or -1 when it is not in the vocabulary.
  int PieceToId(std::string_view piece) const;

 private:
  explicit SentencePieceReference(std::unique_ptr<sentencepiece::SentencePieceProcessor> sp);
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
};

// Trains a model with libsentencepiece's trainer on `sentences`, with spm_train flags
// `args` (e.g. "--model_type=bpe --vocab_size=300"), and returns the serialized
// ModelProto; on failure returns "" and sets `*error`.
std::string TrainSentencePieceModel(const std::string& args,
                                    const std::vector<std::string>& sentences, std::string* error);

}  // namespace orca::tokenizer_test
