// Fuzzes model.safetensors.index.json, the shard index of a checkpoint, through
// Checkpoint::Open (engine/model/checkpoint.h), which also checks the tensors it maps
// against config.json.
//
// The checkpoint directory holds the real stories260K config.json and its
// model.safetensors under three names (the single-file name and two shard names), so
// an index may split the real tensors across shards; the input becomes the index.

#include <cstddef>
#include <cstdint>

#include "engine/model/checkpoint.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = [] {
    const std::string model = orca::fuzz::SourcePath("models/stories260K");
    const std::string weights = model + "/model.safetensors";
    return orca::fuzz::FixtureDir("index", {{"config.json", model + "/config.json"},
                                            {"model.safetensors", weights},
                                            {"model-00001-of-00002.safetensors", weights},
                                            {"model-00002-of-00002.safetensors", weights}});
  }();
  orca::fuzz::WriteFileOrDie(dir + "/model.safetensors.index.json",
                             std::string_view(reinterpret_cast<const char*>(data), size));
  auto checkpoint = orca::Checkpoint::Open(dir);
  if (!checkpoint.ok()) return 0;
  for (const auto& [name, tensor] : (*checkpoint)->tensors()) {
    if ((*checkpoint)->FileOf(name).empty()) __builtin_trap();  // every tensor has a file
    (void)tensor->num_elements();
  }
  return 0;
}
