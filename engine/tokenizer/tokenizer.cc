#include "engine/tokenizer/tokenizer.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/common/file_util.h"
#include "engine/tokenizer/internal/hf_tokenizer.h"
#include "engine/tokenizer/internal/sentencepiece_tokenizer.h"

namespace orca {

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromDirectory(const std::string& dir) {
  if (FileExists(JoinPath(dir, "tokenizer.json"))) {
    return tokenizer_internal::HfTokenizer::Load(dir);
  }
  if (FileExists(JoinPath(dir, "tokenizer.model"))) {
    return tokenizer_internal::SentencePieceTokenizer::Load(dir);
  }
  return absl::NotFoundError(absl::StrCat(JoinPath(dir, "tokenizer.json"),
                                          ": file not found (and no tokenizer.model beside it)"));
}

}  // namespace orca
