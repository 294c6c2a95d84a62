// A KV cache sized by device memory (kv_cache.size_mib = 0 on CUDA, kv_cache_sizing.h):
// LocalExecutor on the CUDA backend gives the cache what memory_fraction of the
// device leaves after the weights and a profiling pass, and the cache works to its last
// block. On the CUDA twin ctest runs this with two device sizes
// (ORCA_CUDA_TWIN_DEVICE_MEMORY) and once with a device too small for one sequence.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "engine/core/local_executor.h"
#include "tests/kernels/gpu_test_util.h"
#include "tests/testutil/testutil.h"

namespace orca {
namespace {

LocalExecutorOptions CudaAutoOptions(const std::string& dir) {
  LocalExecutorOptions o;
  o.model.dir = dir;
  o.device.type = Device::kCuda;
  o.kv_cache.size_mib = 0;  // auto
  o.kv_cache.block_size = 16;
  return o;
}

TEST(CudaKvMemoryTest, CacheTakesWhatTheDeviceBudgetLeaves) {
  ORCA_REQUIRE_GPU();
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  if (std::getenv("ORCA_TEST_EXPECT_NO_FIT") != nullptr) GTEST_SKIP() << "the no-fit case runs";
  size_t free_bytes = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
  const LocalExecutorOptions options = CudaAutoOptions(dir);
  auto e = LocalExecutor::Create(options);
  ASSERT_TRUE(e.ok()) << e.status();
  ModelRunner& runner = (*e)->runner();
  // budget - weights - reserve (2%) bounds the cache from above; the profiling pass's
  // activations (stories260K at 512 tokens: a few MiB) from below.
  const double budget = options.device.memory_fraction * static_cast<double>(total);
  const double upper = budget - static_cast<double>(runner.weight_bytes()) - budget / 50;
  const double kv = static_cast<double>(runner.kv_cache_bytes());
  EXPECT_LE(kv, upper);
  EXPECT_GE(kv, upper - 16.0 * (1 << 20)) << "more than 16 MiB unaccounted for";
  EXPECT_EQ(runner.kv_cache_bytes(), runner.KvBytesFor(runner.num_kv_blocks()));
  EXPECT_GE(int64_t{runner.num_kv_blocks()} * 16, runner.config().max_position_embeddings);

  // The resized cache works up to its last block.
  IterationPlan plan;
  ScheduledSequence s;
  s.seq_id = 1;
  s.token_ids = {1, 403, 407};
  s.block_table = {runner.num_kv_blocks() - 1};
  s.sample = true;
  plan.seqs.push_back(s);
  ASSERT_TRUE((*e)->Submit(plan).ok());
  auto result = (*e)->Wait();
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->tokens.size(), 1u);
  EXPECT_GE(result->tokens[0].token_id, 0);
}

TEST(CudaKvMemoryTest, ADeviceTooSmallForOneSequenceIsAClearError) {
  ORCA_REQUIRE_GPU();
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  if (std::getenv("ORCA_TEST_EXPECT_NO_FIT") == nullptr) {
    GTEST_SKIP() << "needs a device too small for stories260K's 512 tokens (the twin's entry)";
  }
  LocalExecutorOptions options = CudaAutoOptions(dir);
  options.scheduler.max_batched_tokens = 16;  // a profiling pass that fits
  options.scheduler.max_batch_size = 2;
  auto e = LocalExecutor::Create(options);
  ASSERT_EQ(e.status().code(), absl::StatusCode::kResourceExhausted) << e.status();
  EXPECT_NE(e.status().message().find("not even one sequence of 512 tokens"), std::string::npos)
      << e.status();
  EXPECT_NE(e.status().message().find("- peak activations"), std::string::npos) << e.status();
}

}  // namespace
}  // namespace orca
