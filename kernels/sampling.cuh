// Token sampling on the device: greedy, and top-k / top-p / min-p at a temperature,
// choosing exactly the token the host sampler (engine/runner/sampler.h) chooses for
// the same logits and uniform draw whenever the host keeps at most
// kMaxSampleCandidates candidates (greedy, or top_k in [1, kMaxSampleCandidates]).
// Penalties, bans and logprobs stay on the host.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace orca::kernels {

constexpr int32_t kMaxSampleCandidates = 1024;

// Per-row parameters, as SamplingParams; same layout on host and device.
struct DeviceSamplingParams {
  float temperature = 0.0f;  // below 1e-5: greedy
  int32_t top_k = 0;         // 0 or above kMaxSampleCandidates: kMaxSampleCandidates
  float top_p = 1.0f;
  float min_p = 0.0f;
  double uniform = 0.0;  // the draw in [0, 1): SeededUniform(seed, output_index)
};

// For each of `rows` rows of `logits` ([rows, vocab], rows `ld` floats apart) writes
// the sampled token id to tokens[row]. `params` is a device array of `rows` entries.
// Greedy picks the first maximal logit. Returns the launch error, if any.
cudaError_t LaunchSample(const float* logits, int64_t ld, int64_t rows, int64_t vocab,
                         const DeviceSamplingParams* params, int32_t* tokens, cudaStream_t stream);

}  // namespace orca::kernels
