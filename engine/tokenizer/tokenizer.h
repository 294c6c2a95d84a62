// Tokenizer: text <-> token ids for a Hugging Face checkpoint directory.
//
// Supported inputs (DESIGN.md section 5):
//   - tokenizer.json with a BPE model, either byte-level (GPT-2 / Llama-3 / Qwen
//     pre-tokenizer regexes) or SentencePiece-style (U+2581 word prefix, byte fallback,
//     Llama-2 normalizer/decoder), plus added/special tokens;
//   - tokenizer_config.json for BOS/EOS handling (add_bos_token, add_eos_token,
//     bos_token, eos_token) and the chat template text;
//   - tokenizer.model (a SentencePiece BPE model, read by orca itself) when no
//     tokenizer.json is present.
//
// A Tokenizer is immutable after construction and safe for concurrent use from many
// threads. A StreamingDetokenizer is per sequence and not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace orca {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Loads the tokenizer of checkpoint directory `dir`: tokenizer.json when present,
  // else tokenizer.model. Fails with a Status naming the file and the problem.
  static absl::StatusOr<std::unique_ptr<Tokenizer>> FromDirectory(const std::string& dir);

  // Encodes `text`. With `add_special_tokens`, prepends BOS (and appends EOS) as the
  // tokenizer's configuration asks. Special-token strings in `text` (e.g. "<s>") map to
  // their ids. Never fails on any byte sequence: invalid UTF-8 is handled by byte
  // fallback or byte-level tokens.
  virtual std::vector<int32_t> Encode(std::string_view text, bool add_special_tokens) const = 0;

  // Decodes `ids` to text. Unknown ids decode to nothing. With `skip_special_tokens`,
  // special tokens (BOS, EOS, added special tokens) are dropped.
  virtual std::string Decode(absl::Span<const int32_t> ids, bool skip_special_tokens) const = 0;

  // Decodes `ids` without special tokens to raw bytes: invalid UTF-8 (a token holding
  // part of a character) is kept, not replaced (for guided decoding's token bytes).
  virtual std::string DecodeBytes(absl::Span<const int32_t> ids) const = 0;

  // Returns the number of ids the tokenizer knows (including added tokens).
  virtual int32_t vocab_size() const = 0;
  virtual std::optional<int32_t> bos_id() const = 0;
  virtual std::optional<int32_t> eos_id() const = 0;
  // Returns the id of token string `token` (vocabulary piece or added token).
  virtual std::optional<int32_t> TokenToId(std::string_view token) const = 0;
  // Returns the raw vocabulary string of `id` ("" when unknown).
  virtual std::string IdToToken(int32_t id) const = 0;
  virtual bool IsSpecial(int32_t id) const = 0;
  // Returns the chat template from tokenizer_config.json ("" when absent).
  virtual const std::string& chat_template() const = 0;
};

// Turns a stream of token ids into text increments. Never emits a partial UTF-8
// sequence: bytes of an incomplete character are held until the character completes
// (or flushed as U+FFFD by Flush()); bytes that can no longer complete one are emitted
// at once as U+FFFD, so at most one character's ids are ever held. Handles tokenizers whose
// decoding of a token depends on its neighbours (the SentencePiece leading-space rule).
class StreamingDetokenizer {
 public:
  // `context`: ids already shown (the prompt's last few), never emitted, so the first
  // pushed id decodes as a continuation (SentencePiece keeps its leading space).
  StreamingDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens = true,
                       absl::Span<const int32_t> context = {});

  // Appends `id` and returns the newly completed text (possibly empty).
  std::string Push(int32_t id);
  // Returns whatever is still held back, with incomplete bytes replaced by U+FFFD.
  std::string Flush();

 private:
  // Moves the decoding window past the ids just emitted, ids_[read_offset_, end).
  void Advance(size_t end);
  // How many of the last pending ids spell a character that may still complete (0: none).
  size_t IdsOfIncompleteTail() const;

  const Tokenizer& tokenizer_;
  bool skip_special_tokens_;
  std::vector<int32_t> ids_;
  size_t prefix_offset_ = 0;  // ids_[prefix_offset_..read_offset_) is decoded context
  size_t read_offset_ = 0;    // ids_[read_offset_..) not yet emitted
};

// Writes a synthetic byte-level BPE tokenizer (tokenizer.json, tokenizer_config.json)
// with exactly `vocab_size` ids (>= 259: 256 byte tokens, <s>, </s>, <unk>, then
// merges learned from a built-in English corpus, then filler merges) into `dir`.
// Used by `orca model random` so random-weight checkpoints round-trip text.
absl::Status WriteSyntheticTokenizer(const std::string& dir, int32_t vocab_size);

}  // namespace orca
