// Fuzzes tokenizer_config.json (engine/tokenizer/internal/tokenizer_config.h: BOS/EOS
// handling, special-token spellings, the chat template) beside the real stories260K
// tokenizer.json, loaded with Tokenizer::FromDirectory and, when it loads, exercised
// (tokenizer_exercise.h).

#include <cstddef>
#include <cstdint>

#include "engine/tokenizer/tokenizer.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/tokenizer_exercise.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = orca::fuzz::FixtureDir(
      "tokenizer_config",
      {{"tokenizer.json", orca::fuzz::SourcePath("models/stories260K/tokenizer.json")}});
  orca::fuzz::WriteFileOrDie(dir + "/tokenizer_config.json",
                             std::string_view(reinterpret_cast<const char*>(data), size));
  auto tokenizer = orca::Tokenizer::FromDirectory(dir);
  if (tokenizer.ok()) orca::fuzz::ExerciseTokenizer(**tokenizer);
  return 0;
}
