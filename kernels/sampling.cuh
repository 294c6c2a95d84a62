// Token sampling on the device, choosing the token the host sampler
// (engine/runner/sampler.h) chooses for the same logits and uniform draw: greedy;
// top-k (with top-p / min-p) at a temperature when top_k is in [1,
// kMaxSampleCandidates], by selecting the k best (radix selection over the logits'
// keys, then a sort of those k) and the host's arithmetic in its order; the whole
// vocabulary in id order when nothing truncates (top_k 0, top_p 1, min_p 0); and any
// other truncation (top-p or min-p without a top-k, a larger top-k) by radix selection
// of the kept prefix of the candidate order and of the drawn token, weights summed in
// fixed point. The id-order draw sums in another order than the host (a draw within
// ~1e-16 of a boundary may differ), the prefix searches in fixed point (within n x
// 2^(bits of n - 62) of the top token's weight, 4e-9 at 128,256 tokens); both are
// deterministic. NaN logits are never chosen and +inf counts as the largest float, as
// on the host. A row may carry a token mask (guided decoding, bans): tokens whose bit
// is clear count as -inf, as the host's ApplyPenalties makes them.
// A row may also ask for logprobs (of the processed logits: sanitised and masked, before
// temperature and truncation, as the host reports them): the drawn token's and the top
// N's (N <= kMaxDeviceLogprobs, found by radix selection), with log-softmax's
// normaliser summed in another order than the host's (a value may differ in its last
// float bit). Logit bias and penalties arrive as per-token edits the host computed
// (DeviceLogitEdit), applied to the logits in place first with the host's float
// operations in the host's order, so the draw sees the logits SampleToken would.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace orca::kernels {

constexpr int32_t kMaxSampleCandidates = 1024;
constexpr int32_t kMaxDeviceLogprobs = 20;  // OpenAI's top_logprobs limit

// Per-row parameters, as SamplingParams; same layout on host and device.
struct DeviceSamplingParams {
  float temperature = 0.0f;  // below 1e-5: greedy
  int32_t top_k = 0;         // 0: none (the id-order draw, or radix selection with top-p / min-p)
  float top_p = 1.0f;
  float min_p = 0.0f;
  double uniform = 0.0;   // the draw in [0, 1): SeededUniform(seed, output_index)
  int32_t mask_row = -1;  // row of `masks` allowing tokens (bit t % 32 of word t / 32); -1: all
  int32_t logprobs = -1;  // -1: none; 0: the drawn token's; N: and the top N's
  float repetition_penalty = 1.0f;  // for the edits that ask for it
  int32_t edits_begin = 0;          // the row's edits: edits[edits_begin, edits_end)
  int32_t edits_end = 0;
};

// One token's logit edit, as the host's ApplyPenalties makes it on a sanitised logit x:
// x += bias (kEditBias); x -= subtract (kEditSubtract: frequency x count + presence,
// computed by the host); then x = x > 0 ? x / r : x * r (kEditRepeat, r the row's
// repetition_penalty). Same layout on host and device.
constexpr uint32_t kEditBias = 1, kEditSubtract = 2, kEditRepeat = 4;
struct DeviceLogitEdit {
  int32_t token = 0;
  uint32_t ops = 0;
  float bias = 0.0f;
  float subtract = 0.0f;
};

// A row's logprobs: the drawn token's, and the top `logprobs` tokens (larger logit,
// then smaller id, first) with theirs. Same layout on host and device.
struct DeviceRowLogprobs {
  float logprob = 0.0f;
  int32_t top_ids[kMaxDeviceLogprobs] = {};
  float top_logprobs[kMaxDeviceLogprobs] = {};
};

// 32-bit words of one row of token masks (host code; the kernel computes the same).
constexpr int64_t MaskWords(int64_t vocab) { return (vocab + 31) / 32; }

// For each of `rows` rows of `logits` ([rows, vocab], rows `ld` floats apart) writes
// the sampled token id to tokens[row], and for rows whose params ask for logprobs (at
// most kMaxDeviceLogprobs) their logprobs to logprobs[row] (device, `rows` entries; may
// be null when no row asks). `params` is a device array of `rows` entries; `masks`
// (device, MaskWords(vocab) words per mask row; null when no row has one) the rows
// params[].mask_row index; `edits` (device; null when no row has any) the edits rows'
// ranges index, which change `logits` in place before the draw. Greedy picks the first
// maximal logit. Returns the launch error, if any.
cudaError_t LaunchSample(float* logits, int64_t ld, int64_t rows, int64_t vocab,
                         const DeviceSamplingParams* params, const uint32_t* masks,
                         const DeviceLogitEdit* edits, int32_t* tokens, DeviceRowLogprobs* logprobs,
                         cudaStream_t stream);

}  // namespace orca::kernels
