// A thin wrapper over libsentencepiece's SentencePieceProcessor with a std-only
// interface. It exists because sentencepiece_processor.h declares absl::string_view
// itself, which clashes with abseil's headers: only sentencepiece_bridge.cc includes it.
// Thread-safe after Load (SentencePieceProcessor's const methods are).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace orca::tokenizer_internal {

class SentencePieceBridge {
 public:
  // Loads the model file at `path`. On failure returns nullptr and sets `*error`.
  static std::unique_ptr<SentencePieceBridge> Load(const std::string& path, std::string* error);
  ~SentencePieceBridge();

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
  std::string IdToPiece(int id) const;
  // Returns the id of `piece`, or -1 when it is not in the vocabulary.
  int PieceToId(std::string_view piece) const;

 private:
  explicit SentencePieceBridge(std::unique_ptr<sentencepiece::SentencePieceProcessor> sp);
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
};

}  // namespace orca::tokenizer_internal
