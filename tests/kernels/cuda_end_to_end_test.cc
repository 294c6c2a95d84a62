// End to end on the GPU: stories260K through ModelRunner on the CUDA backend produces
// the CPU backend's greedy tokens and logits (whole prefill, chunked prefill, decode)
// and prompt logprobs.
#include <gtest/gtest.h>

#include "engine/backend/cuda/cuda_backend.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/engine/runner/runner_test_util.h"
#include "tests/kernels/gpu_test_util.h"
#include "tests/testutil/testutil.h"

namespace orca {
namespace {

struct GpuModel {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<ModelRunner> runner;
};

GpuModel LoadOnGpu(const std::string& dir, DType kv_dtype = DType::kF32) {
  GpuModel m;
  auto backend = CreateCudaBackend();
  EXPECT_TRUE(backend.ok()) << backend.status();
  if (!backend.ok()) return m;
  m.backend = std::move(*backend);
  ModelRunnerOptions opts;
  opts.num_kv_blocks = 256;
  opts.block_size = 16;
  opts.kv_cache_dtype = kv_dtype;
  auto runner = ModelRunner::Create(dir, m.backend.get(), opts);
  EXPECT_TRUE(runner.ok()) << runner.status();
  if (runner.ok()) m.runner = std::move(*runner);
  return m;
}

TEST(CudaEndToEndTest, Stories260KGreedyTokensEqualCpu) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  ORCA_REQUIRE_GPU();
  auto tok = Tokenizer::FromDirectory(dir);
  ASSERT_TRUE(tok.ok()) << tok.status();
  const std::vector<int32_t> prompt = (*tok)->Encode("Once upon a time", true);

  auto cpu = testing::LoadModel(dir);
  ASSERT_NE(cpu.runner, nullptr);
  GpuModel gpu = LoadOnGpu(dir);
  ASSERT_NE(gpu.runner, nullptr);

  constexpr int32_t kSteps = 200;
  const std::vector<int32_t> want = testing::GreedyAlone(*cpu.runner, prompt, kSteps);
  const std::vector<int32_t> got = testing::GreedyAlone(*gpu.runner, prompt, kSteps);
  EXPECT_EQ(got, want);
}

// A 16-bit KV cache on both backends: the same rounded keys and values, the same tokens.
TEST(CudaEndToEndTest, Stories260KGreedyTokensEqualCpuOverSixteenBitCaches) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  ORCA_REQUIRE_GPU();
  auto tok = Tokenizer::FromDirectory(dir);
  ASSERT_TRUE(tok.ok()) << tok.status();
  const std::vector<int32_t> prompt = (*tok)->Encode("Once upon a time", true);
  for (DType kv : {DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(DTypeName(kv));
    auto cpu = testing::LoadModel(dir, 256, 16, 1, kv);
    ASSERT_NE(cpu.runner, nullptr);
    GpuModel gpu = LoadOnGpu(dir, kv);
    ASSERT_NE(gpu.runner, nullptr);
    constexpr int32_t kSteps = 200;
    EXPECT_EQ(testing::GreedyAlone(*gpu.runner, prompt, kSteps),
              testing::GreedyAlone(*cpu.runner, prompt, kSteps));
  }
}

TEST(CudaEndToEndTest, Stories260KLogitsMatchCpuWithChunkedPrefill) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  ORCA_REQUIRE_GPU();
  auto tok = Tokenizer::FromDirectory(dir);
  ASSERT_TRUE(tok.ok()) << tok.status();
  const std::vector<int32_t> tokens = (*tok)->Encode(
      "One day, a girl named Sue went to the store with her mom. They bought apples, bread and "
      "milk.",
      true);

  auto cpu = testing::LoadModel(dir);
  ASSERT_NE(cpu.runner, nullptr);
  GpuModel gpu = LoadOnGpu(dir);
  ASSERT_NE(gpu.runner, nullptr);
  const std::vector<float> want =
      testing::PrefillLogits(*cpu.runner, tokens, static_cast<int32_t>(tokens.size()));
  for (int32_t chunk : {static_cast<int32_t>(tokens.size()), 7, 1}) {
    SCOPED_TRACE(chunk);
    const std::vector<float> got = testing::PrefillLogits(*gpu.runner, tokens, chunk);
    ORCA_EXPECT_CONSISTENT(got, want, 1e-3);
  }
}

// Prompt logprobs on the GPU (LM head passes of 128 rows, scores on the host) equal the
// CPU backend's: whole prefill of 199 scored rows (two passes) and chunks of 16.
TEST(CudaEndToEndTest, Stories260KPromptLogprobsMatchCpu) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  ORCA_REQUIRE_GPU();
  std::vector<int32_t> tokens = {1, 403, 407, 261, 378};
  for (int i = 0; i < 195; ++i) tokens.push_back((i * 7919 + 13) % 512);
  auto cpu = testing::LoadModel(dir);
  ASSERT_NE(cpu.runner, nullptr);
  GpuModel gpu = LoadOnGpu(dir);
  ASSERT_NE(gpu.runner, nullptr);
  const std::vector<PromptLogprob> want = testing::ScorePrompt(*cpu.runner, tokens, 200, 3);
  ASSERT_EQ(want.size(), tokens.size() - 1);
  for (int32_t chunk : {200, 16}) {
    SCOPED_TRACE(chunk);
    const std::vector<PromptLogprob> got = testing::ScorePrompt(*gpu.runner, tokens, chunk, 3);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].token_id, want[i].token_id);
      EXPECT_NEAR(got[i].logprob, want[i].logprob, 1e-3) << "position " << i + 1;
      // Deep in the vocabulary neighbouring logits are closer than the two backends'
      // rounding: ranks there may swap by a few places.
      EXPECT_NEAR(got[i].rank, want[i].rank, 2 + want[i].rank / 50) << "position " << i + 1;
      ASSERT_EQ(got[i].top_logprobs.size(), 3u);
      EXPECT_EQ(got[i].top_logprobs[0].first, want[i].top_logprobs[0].first) << i + 1;
    }
  }
}

}  // namespace
}  // namespace orca
