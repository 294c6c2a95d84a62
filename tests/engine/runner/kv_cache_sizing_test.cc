// KvCacheBlocks: the one KV sizing rule, for one process and for every rank of a group;
// KvBlocksFromMemory: the arithmetic of a cache sized by device memory.
// Expected counts are worked out by hand from stories260K's shape (5 layers, 4 KV heads
// of 8 dims, F32 unless said): a 16-token block holds K and V of every layer the rank
// holds.
#include <gtest/gtest.h>

#include "engine/model/model_config.h"
#include "engine/runner/kv_cache_sizing.h"
#include "engine/runner/model_runner.h"
#include "tests/testutil/testutil.h"

namespace orca {
namespace {

TEST(KvCacheSizingTest, BudgetOverTheLargestRanksBlock) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  auto config = LoadModelConfig(dir);
  ASSERT_TRUE(config.ok()) << config.status();
  KvCacheOptions kv;
  kv.block_size = 16;
  kv.size_mib = 1;
  const int64_t mib = 1 << 20;
  // One rank: 2 (K, V) x 5 layers x 16 tokens x 4 heads x 8 dims x 4 bytes.
  EXPECT_EQ(*KvCacheBlocks(*config, {5}, 1, kv, DType::kF32), mib / (2 * 5 * 16 * 4 * 8 * 4));
  // PP=2: stage 0 holds 3 layers, stage 1 two; every rank gets stage 0's count.
  EXPECT_EQ(*KvCacheBlocks(*config, {3, 2}, 1, kv, DType::kF32), mib / (2 * 3 * 16 * 4 * 8 * 4));
  // The larger stage decides whichever it is: 1 + 4 layers give the 4-layer stage's count.
  EXPECT_EQ(*KvCacheBlocks(*config, {1, 4}, 1, kv, DType::kF32), mib / (2 * 4 * 16 * 4 * 8 * 4));
  // TP=2: two KV heads per rank.
  EXPECT_EQ(*KvCacheBlocks(*config, {5}, 2, kv, DType::kF32), mib / (2 * 5 * 16 * 2 * 8 * 4));
  // 16-bit caches: 2 bytes an element instead of 4, twice the blocks.
  EXPECT_EQ(*KvCacheBlocks(*config, {5}, 1, kv, DType::kF16), mib / (2 * 5 * 16 * 4 * 8 * 2));
  EXPECT_EQ(*KvCacheBlocks(*config, {5}, 1, kv, DType::kBF16), mib / (2 * 5 * 16 * 4 * 8 * 2));
  EXPECT_EQ(ModelRunner::KvBytesPerBlock(*config, ModelShard{}, 16, DType::kBF16),
            size_t{2 * 5 * 16 * 4 * 8 * 2});
  kv.num_blocks = 7;  // an explicit count wins
  EXPECT_EQ(*KvCacheBlocks(*config, {3, 2}, 2, kv, DType::kF32), 7);
}

TEST(KvCacheSizingTest, TheCacheDTypeResolvesPerDevice) {
  EXPECT_EQ(*ResolveKvCacheDType(WeightDType::kAuto, Device::kCpu), DType::kF16);
  EXPECT_EQ(*ResolveKvCacheDType(WeightDType::kAuto, Device::kCuda), DType::kF16);
  EXPECT_EQ(*ResolveKvCacheDType(WeightDType::kBFloat16, Device::kCpu), DType::kBF16);
  EXPECT_EQ(*ResolveKvCacheDType(WeightDType::kFloat32, Device::kCpu), DType::kF32);
  EXPECT_EQ(*ResolveKvCacheDType(WeightDType::kBFloat16, Device::kCuda), DType::kBF16);
}

TEST(KvCacheSizingTest, Errors) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  auto config = LoadModelConfig(dir);
  ASSERT_TRUE(config.ok());
  KvCacheOptions kv;
  kv.block_size = 0;
  EXPECT_EQ(KvCacheBlocks(*config, {5}, 1, kv, DType::kF32).status().code(),
            absl::StatusCode::kInvalidArgument);
  kv.block_size = 16;
  EXPECT_EQ(
      KvCacheBlocks(*config, {5}, 3, kv, DType::kF32).status().code(),  // 4 KV heads over 3 ranks
      absl::StatusCode::kInvalidArgument);
  kv.num_blocks = 5;  // the layout is checked even with an explicit count
  EXPECT_EQ(KvCacheBlocks(*config, {1, 1, 1, 1, 1, 0}, 1, kv, DType::kF32).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KvCacheBlocks(*config, {3, 3}, 1, kv, DType::kF32).status().code(),  // 6 of 5 layers
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KvCacheBlocks(*config, {}, 1, kv, DType::kF32).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(KvCacheSizingTest, AutoMeansTheDefaultBudgetExceptForOneCudaProcess) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  auto config = LoadModelConfig(dir);
  ASSERT_TRUE(config.ok());
  KvCacheOptions kv;
  kv.block_size = 16;
  kv.size_mib = 0;
  EXPECT_EQ(*KvCacheBlocks(*config, {5}, 1, kv, DType::kF32),
            (1024 << 20) / (2 * 5 * 16 * 4 * 8 * 4));
  EXPECT_TRUE(KvCacheSizedByMemory(kv, Device::kCuda));
  EXPECT_FALSE(KvCacheSizedByMemory(kv, Device::kCpu));
  kv.size_mib = 64;
  EXPECT_FALSE(KvCacheSizedByMemory(kv, Device::kCuda));
  kv.size_mib = 0;
  kv.num_blocks = 10;
  EXPECT_FALSE(KvCacheSizedByMemory(kv, Device::kCuda));
}

TEST(KvCacheSizingTest, MemoryLeftAfterWeightsActivationsAndReserve) {
  const size_t mib = 1 << 20;
  MemoryMeasurement m;
  m.budget_bytes = 1000 * mib;  // memory_fraction x the device
  m.weight_bytes = 300 * mib;
  m.probe_kv_bytes = 10 * mib;
  m.free_bytes = 640 * mib;  // in use: 360 = 300 weights + 10 probe + 50 activations
  auto plan = KvBlocksFromMemory(m, /*bytes_per_block=*/mib, /*block_size=*/16, /*max_len=*/512);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->activation_bytes, 50 * mib);
  EXPECT_EQ(plan->reserve_bytes, 20 * mib);  // 2% of the budget
  EXPECT_EQ(plan->kv_bytes, 630 * mib);      // 1000 - 300 - 50 - 20
  EXPECT_EQ(plan->num_blocks, 630);
  EXPECT_EQ(plan->tokens, 630 * 16);
  EXPECT_NE(plan->Describe().find("KV cache 630 MiB = budget 1000 MiB - weights 300 MiB - peak "
                                  "activations 50 MiB - reserve 20 MiB: 630 blocks, 10080 tokens"),
            std::string::npos)
      << plan->Describe();
}

TEST(KvCacheSizingTest, MemoryThatHoldsNoFullSequenceIsAClearError) {
  const size_t mib = 1 << 20;
  MemoryMeasurement m;
  m.budget_bytes = 100 * mib;
  m.weight_bytes = 90 * mib;
  m.free_bytes = 8 * mib;  // 2 MiB of activations; 100 - 90 - 2 - 2 = 6 MiB of cache
  auto plan = KvBlocksFromMemory(m, mib, 16, /*max_len=*/4096);  // needs 257 blocks
  ASSERT_EQ(plan.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(plan.status().message().find("not even one sequence of 4096 tokens"), std::string::npos)
      << plan.status();
  EXPECT_NE(plan.status().message().find("budget 100 MiB - weights 90 MiB"), std::string::npos);
  // Weights alone over the budget: no cache at all, still an error and no underflow.
  m.weight_bytes = 200 * mib;
  m.free_bytes = 0;
  EXPECT_EQ(KvBlocksFromMemory(m, mib, 16, 16).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(KvBlocksFromMemory(m, 0, 16, 16).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace orca
