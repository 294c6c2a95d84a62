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

// What backends take: top-k up to 1024 only; that and logprobs; the CUDA backend's.
const SamplingCaps kTopK1024{true, 1024, -1, false};
const SamplingCaps kLogprobs20{true, 1024, 20, false};
const SamplingCaps kCuda{true, INT32_MAX, kernels::kMaxDeviceLogprobs, true};

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
// be what SampleToken draws for `seqs[row]` on the host (and the logprobs the rows ask
// for to be the host's within the last float bit); returns the kernel's tokens (empty
// when the launch failed). `masks` and `edits` may be empty (no row has any).
std::vector<int32_t> SampleAndCompareWithHost(
    const std::vector<float>& logits, int32_t vocab,
    const std::vector<kernels::DeviceSamplingParams>& params, const std::vector<uint32_t>& masks,
    const std::vector<ScheduledSequence>& seqs,
    const std::vector<kernels::DeviceLogitEdit>& edits = {}) {
  const int32_t rows = static_cast<int32_t>(params.size());
  DeviceArray<float> d_logits(logits);
  DeviceArray<kernels::DeviceSamplingParams> d_params(params);
  DeviceArray<uint32_t> d_masks(masks.empty() ? std::vector<uint32_t>{0u} : masks);
  DeviceArray<int32_t> d_tokens(std::vector<int32_t>(rows, -1));
  DeviceArray<kernels::DeviceRowLogprobs> d_logprobs{std::vector<kernels::DeviceRowLogprobs>(rows)};
  DeviceArray<kernels::DeviceLogitEdit> d_edits(
      edits.empty() ? std::vector<kernels::DeviceLogitEdit>(1) : edits);
  const cudaError_t launched = kernels::LaunchSample(
      d_logits.get(), vocab, rows, vocab, d_params.get(), masks.empty() ? nullptr : d_masks.get(),
      edits.empty() ? nullptr : d_edits.get(), d_tokens.get(), d_logprobs.get(), nullptr);
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
    ASSERT_TRUE(SamplesOnBackend(s, kTopK1024, vocab)) << "row " << r;
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
    ASSERT_TRUE(SamplesOnBackend(seqs[r], kTopK1024, vocab)) << "row " << r;
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

  // What stays on the host of a backend that takes top-k up to 1024 and nothing else:
  // anything that edits the logits, logprobs, and top-p or min-p without a top-k.
  ScheduledSequence s;
  s.sampling.temperature = 1.0f;
  EXPECT_TRUE(SamplesOnBackend(s, kTopK1024, vocab));
  s.sampling.top_k = 1024;
  s.sampling.top_p = 0.9f;
  EXPECT_TRUE(SamplesOnBackend(s, kTopK1024, vocab));
  s.sampling.top_k = 1025;
  EXPECT_FALSE(SamplesOnBackend(s, kTopK1024, vocab));
  s.sampling.top_k = 0;
  EXPECT_FALSE(SamplesOnBackend(s, kTopK1024, vocab));
  s.sampling.top_p = 1.0f;
  s.sampling.min_p = 0.05f;
  EXPECT_FALSE(SamplesOnBackend(s, kTopK1024, vocab));
  s.sampling.min_p = 0.0f;
  auto host_only = [&](auto edit) {
    ScheduledSequence t = s;
    edit(t);
    return !SamplesOnBackend(t, kTopK1024, vocab);
  };
  // A backend with logprobs takes rows that want up to its most.
  s.sampling.logprobs = 20;
  EXPECT_TRUE(SamplesOnBackend(s, kLogprobs20, vocab));
  s.sampling.logprobs = 21;
  EXPECT_FALSE(SamplesOnBackend(s, kLogprobs20, vocab));
  s.sampling.logprobs = -1;
  // The CUDA backend takes any truncation.
  s.sampling.top_k = 0;
  s.sampling.top_p = 0.9f;
  EXPECT_TRUE(SamplesOnBackend(s, kCuda, vocab));
  s.sampling.top_k = 20000;
  EXPECT_TRUE(SamplesOnBackend(s, kCuda, vocab));
  s.sampling.top_k = 0;
  s.sampling.top_p = 1.0f;
  EXPECT_TRUE(host_only([](ScheduledSequence& t) { t.sampling.logprobs = 0; }));
  EXPECT_TRUE(host_only([](ScheduledSequence& t) { t.sampling.logit_bias = {{1, 2.0f}}; }));
  EXPECT_TRUE(host_only([](ScheduledSequence& t) { t.sampling.repetition_penalty = 1.1f; }));
  EXPECT_TRUE(host_only([](ScheduledSequence& t) { t.sampling.presence_penalty = 0.5f; }));
  // The CUDA backend takes logit bias and penalties as edits.
  ScheduledSequence edited = s;
  edited.sampling.logit_bias = {{1, 2.0f}};
  edited.sampling.frequency_penalty = 0.3f;
  EXPECT_TRUE(SamplesOnBackend(edited, kCuda, vocab));
  EXPECT_FALSE(SamplesOnBackend(edited, kLogprobs20, vocab));
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
    ASSERT_TRUE(SamplesOnBackend(seqs[r], kCuda, vocab)) << "row " << r;
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

// Radix selection where the k-th candidate is one of many tokens at one logit: top-k's
// k best, logprobs' top N and the nucleus' edge end inside a tie (resolved by the
// smaller id, as the host's order does), a mask that leaves fewer tokens than k (the
// rest tie at -inf), a row of one logit repeated, and logits that differ in their last
// bits only (the keys' low digits decide).
TEST(SamplingKernelTest, SelectionInsideTiesMatchesHostSampler) {
  ORCA_REQUIRE_GPU();
  std::mt19937 rng(17);
  const int32_t vocab = 70000, rows = 40;  // ids above 2^16: three digits of id
  std::vector<float> logits =
      testing::RandomFloats(rng, static_cast<size_t>(rows) * vocab, -6.0f, 6.0f);
  const Knobs knobs[] = {
      {1.0f, 40, 1.0f, 0.0f}, {0.8f, 40, 0.9f, 0.0f},   {1.0f, 1024, 1.0f, 0.0f},
      {1.0f, 0, 0.9f, 0.0f},  {1.0f, 3000, 1.0f, 0.0f}, {1.0f, 1, 1.0f, 0.0f},
      {1.2f, 0, 1.0f, 0.2f},  {0.9f, 700, 0.7f, 0.0f},
  };
  std::vector<ScheduledSequence> seqs = Sequences(knobs, rows, 900);
  for (int32_t r = 0; r < rows; r += 2) seqs[r].sampling.logprobs = 1 + (r / 2) % 20;
  // Every row: 30 tokens above, then 5,000 tied (ids spread over the row), so that every
  // k and N above falls inside the tie.
  for (int32_t r = 0; r < rows; ++r) {
    float* row = logits.data() + int64_t{r} * vocab;
    for (int32_t t = 0; t < 30; ++t) row[(t * 2311) % vocab] = 20.0f + static_cast<float>(t);
    for (int32_t t = 0; t < 5000; ++t) row[(t * 13 + 7) % vocab] = 19.5f;
  }
  // One logit repeated; logits one float step apart; a mask of 10 tokens under top-k 40.
  for (int32_t t = 0; t < vocab; ++t) logits[5 * int64_t{vocab} + t] = 0.25f;
  for (int32_t t = 0; t < vocab; ++t) {
    logits[6 * int64_t{vocab} + t] = std::nextafter(3.0f, 0.0f + static_cast<float>(t % 5));
  }
  seqs[8].allowed_token_mask.assign(kernels::MaskWords(vocab), 0u);
  for (int32_t t = 0; t < 10; ++t) {
    const int32_t id = 60000 + 997 * t % 9000;
    seqs[8].allowed_token_mask[id / 32] |= 1u << (id % 32);
  }
  std::vector<kernels::DeviceSamplingParams> params(rows);
  std::vector<uint32_t> masks;
  for (int32_t r = 0; r < rows; ++r) {
    ASSERT_TRUE(SamplesOnBackend(seqs[r], kCuda, vocab)) << "row " << r;
    const SampleRowParams p = BackendSampleParams(seqs[r]);
    params[r] = {p.temperature, p.top_k, p.top_p, p.min_p, p.uniform, -1, p.logprobs};
    if (r == 8) {
      params[r].mask_row = 0;
      AppendBackendSampleMask(seqs[r], vocab, &masks);
    }
  }
  const std::vector<int32_t> tokens = SampleAndCompareWithHost(logits, vocab, params, masks, seqs);
  ASSERT_EQ(tokens.size(), static_cast<size_t>(rows));
  EXPECT_GE(tokens[8], 60000) << "masked";
}

// Logit bias, presence / frequency penalties on the output and the repetition penalty
// on the whole history arrive as the host's edits and change the logits as
// SampleToken's ApplyPenalties does, under every kind of draw (greedy, whole vocabulary,
// top-k selection, bisection), with logprobs of the edited logits.
TEST(SamplingKernelTest, LogitBiasAndPenaltiesMatchHostSampler) {
  ORCA_REQUIRE_GPU();
  std::mt19937 rng(5);
  const int32_t vocab = 32000, rows = 48;
  std::vector<float> logits =
      testing::RandomFloats(rng, static_cast<size_t>(rows) * vocab, -10.0f, 10.0f);
  const Knobs knobs[] = {
      {0.0f, 0, 1.0f, 0.0f}, {1.0f, 0, 1.0f, 0.0f},  {0.8f, 40, 0.9f, 0.0f},
      {1.0f, 0, 0.9f, 0.0f}, {1.2f, 0, 1.0f, 0.05f}, {0.7f, 3000, 1.0f, 0.0f},
  };
  std::vector<ScheduledSequence> seqs = Sequences(knobs, rows, 900);
  std::uniform_int_distribution<int32_t> token(0, vocab - 1);
  std::vector<kernels::DeviceSamplingParams> params(rows);
  std::vector<LogitEdit> edits;
  for (int32_t r = 0; r < rows; ++r) {
    ScheduledSequence& s = seqs[r];
    SamplingParams& p = s.sampling;
    // A history of 200 tokens drawn from 150 (so some repeat), the first 60 the prompt;
    // the row's top tokens among them, so that the penalties change the draw.
    for (int32_t i = 0; i < 200; ++i) s.penalty_history.push_back(token(rng) % 150);
    for (int32_t i = 0; i < 150; i += 7) logits[r * int64_t{vocab} + i] = 14.0f;
    s.penalty_prompt_len = 60;
    switch (r % 4) {
      case 0:
        p.repetition_penalty = 1.3f;
        break;
      case 1:
        p.frequency_penalty = 0.7f;
        p.presence_penalty = 0.4f;
        break;
      case 2:
        p.logit_bias = {{5, 30.0f}, {7, -100.0f}, {31999, 8.0f}, {5, -1.5f}};
        break;
      default:
        p.repetition_penalty = 0.8f;  // below 1 favours repeats
        p.frequency_penalty = -0.2f;
        p.logit_bias = {{14, -5.0f}, {140, 3.0f}};
    }
    if (r % 3 == 0) p.logprobs = 5;
    ASSERT_TRUE(SamplesOnBackend(s, kCuda, vocab)) << "row " << r;
    const SampleRowParams sp = BackendSampleParams(s);
    params[r] = {sp.temperature,
                 sp.top_k,
                 sp.top_p,
                 sp.min_p,
                 sp.uniform,
                 -1,
                 sp.logprobs,
                 sp.repetition_penalty,
                 static_cast<int32_t>(edits.size()),
                 0};
    AppendLogitEdits(s, vocab, &edits);
    params[r].edits_end = static_cast<int32_t>(edits.size());
  }
  // A row whose edited token is NaN or +inf: sanitised first, as on the host.
  logits[2 * int64_t{vocab} + 5] = NAN;
  logits[6 * int64_t{vocab} + 31999] = INFINITY;
  std::vector<kernels::DeviceLogitEdit> device_edits;
  for (const LogitEdit& e : edits) device_edits.push_back({e.token, e.ops, e.bias, e.subtract});
  const std::vector<int32_t> tokens =
      SampleAndCompareWithHost(logits, vocab, params, {}, seqs, device_edits);
  ASSERT_EQ(tokens.size(), static_cast<size_t>(rows));
  // Without the edits the draws would differ: the penalties and bias bite.
  std::vector<ScheduledSequence> plain = Sequences(knobs, rows, 900);
  int32_t changed = 0;
  for (int32_t r = 0; r < rows; ++r) {
    std::vector<float> row(logits.begin() + int64_t{r} * vocab,
                           logits.begin() + int64_t{r + 1} * vocab);
    changed += SampleToken(absl::MakeSpan(row), plain[r]).token_id != tokens[r];
  }
  EXPECT_GT(changed, rows / 4);
}

}  // namespace
}  // namespace orca
