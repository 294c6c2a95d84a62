// The device sampler picks the same token as the host sampler (SampleToken) for the
// same logits and uniform draw: greedy, and top-k with top-p / min-p at temperatures.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <random>

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

TEST(SamplingKernelTest, MatchesHostSampler) {
  ORCA_REQUIRE_GPU();
  std::mt19937 rng(21);
  const int32_t vocab = 5000;
  struct Knobs {
    float temperature;
    int32_t top_k;
    float top_p, min_p;
  };
  const Knobs knobs[] = {
      {0.0f, 0, 1.0f, 0.0f},     {1.0f, 50, 1.0f, 0.0f},   {0.7f, 40, 0.9f, 0.0f},
      {1.3f, 1024, 0.95f, 0.0f}, {0.8f, 200, 1.0f, 0.05f}, {1.0f, 1, 1.0f, 0.0f},
      {2.0f, 7, 0.5f, 0.1f},     {0.0f, 0, 1.0f, 0.0f},
  };
  const int32_t rows = 64;
  std::vector<float> logits =
      testing::RandomFloats(rng, static_cast<size_t>(rows) * vocab, -8.0f, 8.0f);
  std::vector<kernels::DeviceSamplingParams> params(rows);
  std::vector<ScheduledSequence> seqs(rows);
  for (int32_t r = 0; r < rows; ++r) {
    const Knobs& k = knobs[r % std::size(knobs)];
    ScheduledSequence& s = seqs[r];
    s.seq_id = static_cast<uint64_t>(r);
    s.sampling.temperature = k.temperature;
    s.sampling.top_k = k.top_k;
    s.sampling.top_p = k.top_p;
    s.sampling.min_p = k.min_p;
    s.sampling.seed = 1000 + static_cast<uint64_t>(r);
    s.output_index = r;
    params[r] = {k.temperature, k.top_k, k.top_p, k.min_p,
                 SeededUniform(s.sampling.seed, static_cast<uint64_t>(s.output_index))};
  }
  // A row with tied maxima: greedy picks the first.
  logits[3 * vocab + 10] = logits[3 * vocab + 20] = 100.0f;
  params[3].temperature = seqs[3].sampling.temperature = 0.0f;

  DeviceArray<float> d_logits(logits);
  DeviceArray<kernels::DeviceSamplingParams> d_params(params);
  DeviceArray<int32_t> d_tokens(std::vector<int32_t>(rows, -1));
  ASSERT_EQ(kernels::LaunchSample(d_logits.get(), vocab, rows, vocab, d_params.get(),
                                  d_tokens.get(), nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<int32_t> tokens = d_tokens.Download();
  for (int32_t r = 0; r < rows; ++r) {
    std::vector<float> row(logits.begin() + int64_t{r} * vocab,
                           logits.begin() + int64_t{r + 1} * vocab);
    const SampledToken want = SampleToken(absl::MakeSpan(row), seqs[r]);
    EXPECT_EQ(tokens[r], want.token_id) << "row " << r;
  }
  EXPECT_EQ(tokens[3], 10);
}

}  // namespace
}  // namespace orca
