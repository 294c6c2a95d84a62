// The device sampler picks the same token as the host sampler (SampleToken) for the
// same logits and uniform draw: greedy, and top-k with top-p / min-p at temperatures.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "engine/runner/sampler.h"
#include "kernels/sampling.cuh"
#include "tests/kernels/gpu_test_util.h"

namespace orca {
namespace {

// A device array freed on scope exit.
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(const std::vector<T>& host) : n_(host.size()) {
    EXPECT_EQ(cudaMalloc(&ptr_, sizeof(T) * n_), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(ptr_, host.data(), sizeof(T) * n_, cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceArray() { (void)cudaFree(ptr_); }
  T* get() { return static_cast<T*>(ptr_); }
  std::vector<T> Download() {
    std::vector<T> out(n_);
    EXPECT_EQ(cudaMemcpy(out.data(), ptr_, sizeof(T) * n_, cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }

 private:
  void* ptr_ = nullptr;
  size_t n_;
};

// A row's sampling knobs.
struct Knobs {
  float temperature;
  int32_t top_k;
  float top_p, min_p;
};

// `rows` sequences cycling through `knobs`, row r seeded `seed + r` at output index r.
std::vector<ScheduledSequence> Sequences(absl::Span<const Knobs> knobs, int32_t rows,
                                         uint64_t seed) {
  std::vector<ScheduledSequence> seqs(rows);
  for (int32_t r = 0; r < rows; ++r) {
    const Knobs& k = knobs[r % knobs.size()];
    ScheduledSequence& s = seqs[r];
    s.seq_id = static_cast<uint64_t>(r);
    s.sampling.temperature = k.temperature;
    s.sampling.top_k = k.top_k;
    s.sampling.top_p = k.top_p;
    s.sampling.min_p = k.min_p;
    s.sampling.seed = seed + static_cast<uint64_t>(r);
    s.output_index = r;
  }
  return seqs;
}

// Draws every row of `logits` ([rows, vocab]) with the kernel and expects each token to
// be what SampleToken draws for `seqs[row]` on the host; returns the kernel's tokens
// (empty when the launch failed). `masks` may be empty (no row has one).
std::vector<int32_t> SampleAndCompareWithHost(
    const std::vector<float>& logits, int32_t vocab,
    const std::vector<kernels::DeviceSamplingParams>& params, const std::vector<uint32_t>& masks,
    const std::vector<ScheduledSequence>& seqs) {
  const int32_t rows = static_cast<int32_t>(params.size());
  DeviceArray<float> d_logits(logits);
  DeviceArray<kernels::DeviceSamplingParams> d_params(params);
  DeviceArray<uint32_t> d_masks(masks.empty() ? std::vector<uint32_t>{0u} : masks);
  DeviceArray<int32_t> d_tokens(std::vector<int32_t>(rows, -1));
  DeviceArray<kernels::DeviceRowLogprobs> d_logprobs{std::vector<kernels::DeviceRowLogprobs>(rows)};
  const cudaError_t launched = kernels::LaunchSample(
      d_logits.get(), vocab, rows, vocab, d_params.get(), masks.empty() ? nullptr : d_masks.get(),
      d_tokens.get(), d_logprobs.get(), nullptr);
  EXPECT_EQ(launched, cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  if (launched != cudaSuccess) return {};
  std::vector<int32_t> tokens = d_tokens.Download();
  const std::vector<kernels::DeviceRowLogprobs> logprobs = d_logprobs.Download();
  for (int32_t r = 0; r < rows; ++r) {
    std::vector<float> row(logits.begin() + int64_t{r} * vocab,
                           logits.begin() + int64_t{r + 1} * vocab);
    const SampledToken want = SampleToken(absl::MakeSpan(row), seqs[r]);
    EXPECT_EQ(tokens[r], want.token_id) << "row " << r;
    if (params[r].logprobs < 0) continue;
    // log-softmax's normaliser is summed in another order: the last float bit may differ.
    EXPECT_NEAR(logprobs[r].logprob, want.logprob, 1e-6 * (1 + std::fabs(want.logprob)))
        << "row " << r;
    EXPECT_EQ(want.top_logprobs.size(), static_cast<size_t>(params[r].logprobs)) << "row " << r;
    if (want.top_logprobs.size() > static_cast<size_t>(kernels::kMaxDeviceLogprobs)) continue;
    for (size_t k = 0; k < want.top_logprobs.size(); ++k) {
      EXPECT_EQ(logprobs[r].top_ids[k], want.top_logprobs[k].first) << "row " << r << " top " << k;
      EXPECT_NEAR(logprobs[r].top_logprobs[k], want.top_logprobs[k].second,
                  1e-6 * (1 + std::fabs(want.top_logprobs[k].second)))
          << "row " << r << " top " << k;
    }
  }
  return tokens;
}

TEST(SamplingKernelTest, MatchesHostSampler) {
  ORCA_REQUIRE_GPU();
  std::mt19937 rng(21);
  const int32_t vocab = 5000;
  const Knobs knobs[] = {
      {0.0f, 0, 1.0f, 0.0f},     {1.0f, 50, 1.0f, 0.0f},   {0.7f, 40, 0.9f, 0.0f},
      {1.3f, 1024, 0.95f, 0.0f}, {0.8f, 200, 1.0f, 0.05f}, {1.0f, 1, 1.0f, 0.0f},
      {2.0f, 7, 0.5f, 0.1f},     {0.0f, 0, 1.0f, 0.0f},
  };
  const int32_t rows = 64;
  std::vector<float> logits =
      testing::RandomFloats(rng, static_cast<size_t>(rows) * vocab, -8.0f, 8.0f);
  std::vector<ScheduledSequence> seqs = Sequences(knobs, rows, 1000);
  std::vector<kernels::DeviceSamplingParams> params(rows);
  for (int32_t r = 0; r < rows; ++r) {
    const SampleRowParams p = BackendSampleParams(seqs[r]);
    params[r] = {p.temperature, p.top_k, p.top_p, p.min_p, p.uniform, -1, p.logprobs};
  }
  // A row with tied maxima: greedy picks the first.
  logits[3 * vocab + 10] = logits[3 * vocab + 20] = 100.0f;
  params[3].temperature = seqs[3].sampling.temperature = 0.0f;

  const std::vector<int32_t> tokens = SampleAndCompareWithHost(logits, vocab, params, {}, seqs);
  ASSERT_EQ(tokens.size(), static_cast<size_t>(rows));
  EXPECT_EQ(tokens[3], 10);
}

// Nothing truncates (OpenAI's defaults): the draw walks the whole vocabulary in id
// order, as the host's does; NaN is never drawn and +inf is the largest float; token
// masks (guides, bans) allow what the host allows. And SamplesOnBackend admits exactly
// the rows the kernel draws as the host does.
TEST(SamplingKernelTest, WholeVocabularyDrawsMatchHostSampler) {
  ORCA_REQUIRE_GPU();
  std::mt19937 rng(7);
  const int32_t vocab = 32000, rows = 96;
  std::vector<float> logits =
      testing::RandomFloats(rng, static_cast<size_t>(rows) * vocab, -10.0f, 10.0f);
  const float temperatures[] = {1.0f, 0.7f, 1.5f, 0.05f, 3.0f};
  std::vector<kernels::DeviceSamplingParams> params(rows);
  std::vector<ScheduledSequence> seqs(rows);
  for (int32_t r = 0; r < rows; ++r) {
    ScheduledSequence& s = seqs[r];
    s.seq_id = static_cast<uint64_t>(r);
    s.sampling.temperature = temperatures[r % std::size(temperatures)];
    s.sampling.top_k = r % 7 == 0 ? vocab : 0;  // top_k >= vocab truncates nothing
    s.sampling.seed = 77 + static_cast<uint64_t>(r);
    s.output_index = 3 * r;
    ASSERT_TRUE(SamplesOnBackend(s, kernels::kMaxSampleCandidates, -1, vocab)) << "row " << r;
    const SampleRowParams p = BackendSampleParams(s);
    params[r] = {p.temperature, p.top_k, p.top_p, p.min_p, p.uniform, -1, p.logprobs};
  }
  // Rows with NaN and +inf logits, and one where all but two tokens are NaN.
  for (int32_t t = 0; t < vocab; t += 3) logits[5 * int64_t{vocab} + t] = NAN;
  logits[6 * int64_t{vocab} + 123] = INFINITY;
  for (int32_t t = 0; t < vocab; ++t) logits[7 * int64_t{vocab} + t] = NAN;
  logits[7 * int64_t{vocab} + 4000] = 1.0f;
  logits[7 * int64_t{vocab} + 31999] = 1.5f;
  // Token masks, as guided decoding and bans make them, on whole-vocabulary and top-k
  // rows: a mask of a few allowed tokens, one shorter than the vocabulary (the ids past
  // it are not allowed), bans alone, and greedy under a mask.
  std::vector<uint32_t> masks;
  auto mask_row = [&](int32_t r, ScheduledSequence& s) {
    params[r].mask_row = static_cast<int32_t>(masks.size() / kernels::MaskWords(vocab));
    AppendBackendSampleMask(s, vocab, &masks);
  };
  seqs[10].allowed_token_mask.assign(kernels::MaskWords(vocab), 0u);
  for (int32_t t : {5, 77, 31000, 31999}) seqs[10].allowed_token_mask[t / 32] |= 1u << (t % 32);
  seqs[11].allowed_token_mask.assign(100, 0x0f0f0f0fu);  // 3,200 ids, every other nibble
  seqs[12].banned_token_ids = {0, 1, 2, 17, 31999};
  seqs[13].sampling.temperature = 0.0f;
  seqs[13].allowed_token_mask = seqs[11].allowed_token_mask;
  seqs[14].sampling.top_k = 40;
  seqs[14].sampling.top_p = 0.8f;
  seqs[14].allowed_token_mask = seqs[11].allowed_token_mask;
  for (int32_t r = 10; r <= 14; ++r) {
    ASSERT_TRUE(SamplesOnBackend(seqs[r], kernels::kMaxSampleCandidates, -1, vocab)) << "row " << r;
    const SampleRowParams p = BackendSampleParams(seqs[r]);
    params[r] = {p.temperature, p.top_k, p.top_p, p.min_p, p.uniform, -1, p.logprobs};
    mask_row(r, seqs[r]);
  }
  for (int32_t t = 0; t < 64; ++t) logits[12 * int64_t{vocab} + t] = 9.0f;  // bans bite

  const std::vector<int32_t> tokens = SampleAndCompareWithHost(logits, vocab, params, masks, seqs);
  ASSERT_EQ(tokens.size(), static_cast<size_t>(rows));
  const std::set<int32_t> distinct(tokens.begin(), tokens.end());
  EXPECT_EQ(tokens[6], 123);
  EXPECT_TRUE(tokens[7] == 4000 || tokens[7] == 31999) << tokens[7];
  EXPECT_TRUE(tokens[10] == 5 || tokens[10] == 77 || tokens[10] == 31000 || tokens[10] == 31999);
  for (int32_t r : {11, 13, 14}) {
    EXPECT_TRUE(tokens[r] < 3200 && (tokens[r] / 4) % 2 == 0) << "row " << r << ": " << tokens[r];
  }
  EXPECT_TRUE(tokens[12] >= 3 && tokens[12] != 17) << tokens[12];
  EXPECT_GT(distinct.size(), 80u);  // draws, not one argmax

  // What stays on the host: anything that edits the logits, logprobs, and (for a
  // backend whose top-k stops at 1024) top-p or min-p without a top-k.
  ScheduledSequence s;
  s.sampling.temperature = 1.0f;
  EXPECT_TRUE(SamplesOnBackend(s, 1024, -1, vocab));
  s.sampling.top_k = 1024;
  s.sampling.top_p = 0.9f;
  EXPECT_TRUE(SamplesOnBackend(s, 1024, -1, vocab));
  s.sampling.top_k = 1025;
  EXPECT_FALSE(SamplesOnBackend(s, 1024, -1, vocab));
  s.sampling.top_k = 0;
  EXPECT_FALSE(SamplesOnBackend(s, 1024, -1, vocab));
  s.sampling.top_p = 1.0f;
  s.sampling.min_p = 0.05f;
  EXPECT_FALSE(SamplesOnBackend(s, 1024, -1, vocab));
  s.sampling.min_p = 0.0f;
  auto host_only = [&](auto edit) {
    ScheduledSequence t = s;
    edit(t);
    return !SamplesOnBackend(t, 1024, -1, vocab);
  };
  // A backend with logprobs takes rows that want up to its most.
  s.sampling.logprobs = 20;
  EXPECT_TRUE(SamplesOnBackend(s, 1024, 20, vocab));
  s.sampling.logprobs = 21;
  EXPECT_FALSE(SamplesOnBackend(s, 1024, 20, vocab));
  s.sampling.logprobs = -1;
  // The CUDA backend takes any truncation.
  s.sampling.top_k = 0;
  s.sampling.top_p = 0.9f;
  EXPECT_TRUE(SamplesOnBackend(s, INT32_MAX, -1, vocab));
  s.sampling.top_k = 20000;
  EXPECT_TRUE(SamplesOnBackend(s, INT32_MAX, -1, vocab));
  s.sampling.top_k = 0;
  s.sampling.top_p = 1.0f;
  EXPECT_TRUE(host_only([](ScheduledSequence& t) { t.sampling.logprobs = 0; }));
  EXPECT_TRUE(host_only([](ScheduledSequence& t) { t.sampling.logit_bias = {{1, 2.0f}}; }));
  EXPECT_TRUE(host_only([](ScheduledSequence& t) { t.sampling.repetition_penalty = 1.1f; }));
  EXPECT_TRUE(host_only([](ScheduledSequence& t) { t.sampling.presence_penalty = 0.5f; }));
  // Masks and bans travel to the device as token masks.
  EXPECT_FALSE(host_only([](ScheduledSequence& t) { t.banned_token_ids = {2}; }));
  EXPECT_FALSE(host_only([](ScheduledSequence& t) { t.allowed_token_mask = {1u}; }));
}

// Top-p or min-p without a top-k, and top-k beyond the 1024 the selection path takes:
// the kernel bisects for the kept prefix and the drawn token, and picks what the host
// picks, NaN, +inf, masks and ties at the nucleus' edge included.
TEST(SamplingKernelTest, TruncationWithoutSmallTopKMatchesHostSampler) {
  ORCA_REQUIRE_GPU();
  std::mt19937 rng(99);
  const int32_t vocab = 32000, rows = 120;
  std::vector<float> logits =
      testing::RandomFloats(rng, static_cast<size_t>(rows) * vocab, -10.0f, 10.0f);
  const Knobs knobs[] = {
      {1.0f, 0, 0.9f, 0.0f},    {0.7f, 0, 0.95f, 0.0f},     {1.0f, 0, 0.5f, 0.0f},
      {1.2f, 0, 1.0f, 0.05f},   {0.8f, 0, 0.9f, 0.1f},      {1.0f, 5000, 1.0f, 0.0f},
      {0.6f, 2048, 0.8f, 0.0f}, {1.5f, 31999, 0.99f, 0.0f}, {3.0f, 0, 0.999f, 0.0f},
      {0.3f, 0, 0.3f, 0.0f},    {1.0f, 0, 0.01f, 0.0f},     {2.0f, 1500, 0.95f, 0.02f},
  };
  std::vector<kernels::DeviceSamplingParams> params(rows);
  std::vector<ScheduledSequence> seqs = Sequences(knobs, rows, 500);
  // Logprobs on every third row: the drawn token's alone, or with the top 1 to 20.
  for (int32_t r = 0; r < rows; r += 3) seqs[r].sampling.logprobs = (r / 3) % 21;
  // Rows with NaNs, +inf, a flat top (64 tokens tied at the maximum: the nucleus ends
  // inside the tie, which is resolved by id), logits clustered in two values, and masks.
  for (int32_t t = 0; t < vocab; t += 5) logits[12 * int64_t{vocab} + t] = NAN;
  logits[13 * int64_t{vocab} + 777] = INFINITY;
  for (int32_t r : {14, 26}) {
    for (int32_t t = 100; t < 164; ++t) logits[r * int64_t{vocab} + t] = 12.0f;
  }
  for (int32_t t = 0; t < vocab; ++t) logits[15 * int64_t{vocab} + t] = t % 3 == 0 ? 1.0f : -1.0f;
  seqs[16].allowed_token_mask.assign(kernels::MaskWords(vocab), 0xf0f0f0f0u);
  seqs[17].banned_token_ids = {1, 2, 3, 30000};
  for (int32_t t = 0; t < 4; ++t) logits[17 * int64_t{vocab} + t] = 11.0f;
  std::vector<uint32_t> masks;
  for (int32_t r = 0; r < rows; ++r) {
    ASSERT_TRUE(SamplesOnBackend(seqs[r], INT32_MAX, kernels::kMaxDeviceLogprobs, vocab))
        << "row " << r;
    const SampleRowParams p = BackendSampleParams(seqs[r]);
    params[r] = {p.temperature, p.top_k, p.top_p, p.min_p, p.uniform, -1, p.logprobs};
    if (r == 16 || r == 17) {
      params[r].mask_row = static_cast<int32_t>(masks.size() / kernels::MaskWords(vocab));
      AppendBackendSampleMask(seqs[r], vocab, &masks);
    }
  }

  const std::vector<int32_t> tokens = SampleAndCompareWithHost(logits, vocab, params, masks, seqs);
  ASSERT_EQ(tokens.size(), static_cast<size_t>(rows));
  const std::set<int32_t> distinct(tokens.begin(), tokens.end());
  EXPECT_EQ(tokens[13], 777) << "+inf is the largest float";
  EXPECT_TRUE(tokens[14] >= 100 && tokens[14] < 164) << tokens[14];
  EXPECT_TRUE(tokens[16] % 8 >= 4) << "masked: " << tokens[16];
  EXPECT_TRUE(tokens[17] == 0 || tokens[17] >= 4) << "banned: " << tokens[17];
  EXPECT_GT(distinct.size(), 60u);  // draws, not one argmax
}

}  // namespace
}  // namespace orca
