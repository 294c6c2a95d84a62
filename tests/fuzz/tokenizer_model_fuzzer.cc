// Fuzzes tokenizer.model, a serialized SentencePiece ModelProto read by orca's own
// protobuf wire reader (engine/tokenizer/internal/sentencepiece_model_proto.h), through
// SentencePieceTokenizer::Create, the from-memory half of what Tokenizer::FromDirectory
// does for a checkpoint without tokenizer.json. A model that loads is exercised
// (tokenizer_exercise.h).

#include <cstddef>
#include <cstdint>

#include "engine/tokenizer/internal/sentencepiece_tokenizer.h"
#include "engine/tokenizer/internal/tokenizer_config.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/tokenizer_exercise.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using orca::tokenizer_internal::SentencePieceTokenizer;
  using orca::tokenizer_internal::TokenizerConfig;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto tokenizer = SentencePieceTokenizer::Create(bytes, "tokenizer.model", TokenizerConfig{});
  if (tokenizer.ok()) orca::fuzz::ExerciseTokenizer(**tokenizer);
  return 0;
}
