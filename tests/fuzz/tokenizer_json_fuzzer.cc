// Fuzzes tokenizer.json (engine/tokenizer: the Hugging Face BPE tokenizer, byte-level or
// SentencePiece-style: model, normalizer, pre-tokenizer, decoder, added tokens,
// post-processor). The input is written as tokenizer.json of a checkpoint directory
// that has no tokenizer_config.json, loaded with Tokenizer::FromDirectory and, when it
// loads, exercised (tokenizer_exercise.h).

#include <cstddef>
#include <cstdint>

#include "engine/tokenizer/tokenizer.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/tokenizer_exercise.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = orca::fuzz::FixtureDir("tokenizer_json");
  orca::fuzz::WriteFileOrDie(dir + "/tokenizer.json",
                             std::string_view(reinterpret_cast<const char*>(data), size));
  auto tokenizer = orca::Tokenizer::FromDirectory(dir);
  if (tokenizer.ok()) orca::fuzz::ExerciseTokenizer(**tokenizer);
  return 0;
}
