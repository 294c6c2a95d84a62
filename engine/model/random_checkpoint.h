// Random-weight checkpoints of any shape, for benchmarks and tests: a complete Hugging
// Face directory (config.json, generation_config.json, model.safetensors and a
// synthetic byte-level tokenizer whose vocabulary has exactly vocab_size ids, so text
// round-trips).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/model/model_config.h"

namespace orca {

// Returns the config of a named preset: tiny, llama-110m, llama-1b, gpt2-tiny, gpt2.
absl::StatusOr<ModelConfig> PresetConfig(const std::string& preset);
std::vector<std::string> PresetNames();

// Writes a checkpoint of `config` with weights drawn from a seeded distribution
// (normal-like, std 0.02; norm weights 1) in `config.dtype`, into `dir` (created).
absl::Status WriteRandomCheckpoint(const ModelConfig& config, const std::string& dir,
                                   uint64_t seed);

}  // namespace orca
