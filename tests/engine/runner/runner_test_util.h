// Test helpers around ModelRunner: run a sequence alone, compare logits with the
// PyTorch reference.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/kv/kv_block_pool.h"
#include "engine/runner/model_runner.h"

namespace orca::testing {

struct LoadedModel {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<ModelRunner> runner;
};

// Loads `dir` on a CPU backend with a small KV cache; aborts the test on failure.
LoadedModel LoadModel(const std::string& dir, int32_t num_blocks = 256, int32_t block_size = 16,
                      int32_t sampler_threads = 1, DType kv_cache_dtype = DType::kF32,
                      WeightDType weight_dtype = WeightDType::kAuto);

// Returns the logits of every position of `tokens`, computed by prefill chunks of
// `chunk` tokens (all rows returned). [tokens.size() * vocab].
std::vector<float> PrefillLogits(ModelRunner& runner, const std::vector<int32_t>& tokens,
                                 int32_t chunk);

// The next greedy chunk of a sequence whose first `computed` of `tokens` are in the KV
// cache: at most `chunk` tokens, sampling when it reaches the end of `tokens`. Grows
// `table` from `pool` to hold them (fails the test when the pool is exhausted).
ScheduledSequence NextChunk(uint64_t seq_id, const std::vector<int32_t>& tokens, int32_t computed,
                            int32_t chunk, BlockTable& table, KvBlockPool& pool);

// Scores the prompt `tokens` (prompt logprobs with the top `top_n`) through Execute in
// prefill chunks of `chunk` tokens, as the scheduler plans them: each chunk's rows
// score the tokens after them, the last row the next chunk's first token; positions
// 1 .. `scored_before` count as scored before (a recompute) and are skipped. Returns the
// scores of positions scored_before + 1 .. tokens.size() - 1 (fails the test when a
// chunk's result does not continue where the previous one stopped).
std::vector<PromptLogprob> ScorePrompt(ModelRunner& runner, const std::vector<int32_t>& tokens,
                                       int32_t chunk, int32_t top_n, int32_t scored_before = 0);

// Greedy-decodes `n` tokens after `prompt` alone (ignoring EOS).
std::vector<int32_t> GreedyAlone(ModelRunner& runner, const std::vector<int32_t>& prompt,
                                 int32_t n);

// Runs the PyTorch float64 reference on `tokens`; returns [T * vocab] logits. With
// `kv_dtype` F16 or BF16 the reference rounds cached keys and values to it.
std::vector<double> ReferenceLogits(const std::string& python, const std::string& model_dir,
                                    const std::vector<int32_t>& tokens,
                                    DType kv_dtype = DType::kF32);

// What reference_logprobs.py (PyTorch float64) says of each prompt token: entry i > 0
// scores tokens[i] given tokens[0, i); entry 0 is empty.
struct ReferencePrompt {
  std::vector<double> logprobs;
  std::vector<int32_t> ranks;
  // The ranks a token may take when every logit may be off by 1e-4.
  std::vector<std::pair<int32_t, int32_t>> rank_ranges;
  std::vector<std::vector<std::pair<int32_t, double>>> top;
};
ReferencePrompt ReferencePromptLogprobs(const std::string& python, const std::string& model_dir,
                                        const std::vector<int32_t>& tokens, int32_t top_n,
                                        DType kv_dtype = DType::kF32);

// Returns max_i |a_i - b_i| / max_i |b_i| over one row of `vocab` values.
double RowRelativeError(const float* a, const double* b, int32_t vocab);

}  // namespace orca::testing
