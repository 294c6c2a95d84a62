// Fuzzes generation_config.json, read by LoadModelConfig (engine/model/model_config.h)
// beside the real stories260K config.json: its eos_token_id / bos_token_id override the
// configuration's and are checked against its vocabulary.

#include <cstddef>
#include <cstdint>

#include "engine/model/model_config.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = orca::fuzz::FixtureDir(
      "generation", {{"config.json", orca::fuzz::SourcePath("models/stories260K/config.json")}});
  orca::fuzz::WriteFileOrDie(dir + "/generation_config.json",
                             std::string_view(reinterpret_cast<const char*>(data), size));
  auto config = orca::LoadModelConfig(dir);
  if (!config.ok()) return 0;
  for (int32_t id : config->eos_token_ids) {
    if (id < 0 || id >= config->vocab_size) __builtin_trap();  // Validate's promise
  }
  return 0;
}
