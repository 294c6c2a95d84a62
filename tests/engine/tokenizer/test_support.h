// Shared helpers for the tokenizer tests: locating the stories260K checkpoint, temporary
// directories, a deterministic multilingual test corpus and skip-or-fail for optional
// references.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace orca::tokenizer_test {

// Returns true when env CI=true: missing references then fail instead of skipping.
bool InCi();

// Skips the current test with `message`, or fails it under CI=true.
#define ORCA_SKIP_OR_FAIL(message)                        \
  do {                                                    \
    if (::orca::tokenizer_test::InCi()) {                 \
      FAIL() << message << " (required because CI=true)"; \
    } else {                                              \
      GTEST_SKIP() << message;                            \
    }                                                     \
  } while (0)

// Returns the repository root (env ORCA_SOURCE_DIR, else the working directory).
std::string SourceDir();
// Returns <repo>/models/stories260K (shipped with the repository).
std::string Stories260KDir();
bool Stories260KAvailable();

// A fresh empty directory removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  // Writes `contents` to path()/name and returns the file's path.
  std::string Write(const std::string& name, const std::string& contents) const;

 private:
  std::string path_;
};

struct CorpusOptions {
  bool invalid_utf8 = true;  // random byte strings, truncated and stray UTF-8
  // Text that some tokenizers treat as special tokens, embedded in the strings.
  std::vector<std::string> special_texts = {"<s>", "</s>", "<unk>", "<|endoftext|>"};
  // Leave out U+0085 and U+FEFF, on which JavaScript's \s and Unicode's White_Space
  // disagree.
  bool js_safe_whitespace = false;
};

// Returns `count` varied strings, the same for the same seed: ASCII prose, contractions,
// digits, punctuation, accented Latin, Greek, Cyrillic, CJK, kana, Hangul, scripts with
// combining marks, emoji (with ZWJ, skin tones, flags), whitespace runs of spaces, tabs,
// CR/LF and Unicode spaces, control characters, special-token text and (optionally)
// invalid UTF-8. Starts with a fixed list of edge cases.
std::vector<std::string> MakeCorpus(uint32_t seed, size_t count, const CorpusOptions& options);

// Returns true when `s` contains any of `needles`.
bool ContainsAny(const std::string& s, const std::vector<std::string>& needles);

// A small SentencePiece-style tokenizer.json (Llama-2 layout: Prepend/Replace
// normalizer, byte fallback, ▁ decoder) over letters a-e and a few merges.
std::string TinySentencePieceStyleJson();

}  // namespace orca::tokenizer_test
