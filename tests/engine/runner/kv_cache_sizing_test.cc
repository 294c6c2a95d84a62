// KvCacheBlocks: the one KV sizing rule, for one process and for every rank of a group.
// Expected counts are worked out by hand from stories260K's shape (5 layers, 4 KV heads
// of 8 dims, F32): a 16-token block holds K and V of every layer the rank holds.
#include <gtest/gtest.h>

#include "engine/model/model_config.h"
#include "engine/runner/kv_cache_sizing.h"
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
  EXPECT_EQ(*KvCacheBlocks(*config, 1, 1, kv), mib / (2 * 5 * 16 * 4 * 8 * 4));
  // PP=2: stage 0 holds 3 layers, stage 1 two; every rank gets stage 0's count.
  EXPECT_EQ(*KvCacheBlocks(*config, 2, 1, kv), mib / (2 * 3 * 16 * 4 * 8 * 4));
  // TP=2: two KV heads per rank.
  EXPECT_EQ(*KvCacheBlocks(*config, 1, 2, kv), mib / (2 * 5 * 16 * 2 * 8 * 4));
  kv.num_blocks = 7;  // an explicit count wins
  EXPECT_EQ(*KvCacheBlocks(*config, 2, 2, kv), 7);
}

TEST(KvCacheSizingTest, Errors) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  auto config = LoadModelConfig(dir);
  ASSERT_TRUE(config.ok());
  KvCacheOptions kv;
  kv.block_size = 0;
  EXPECT_EQ(KvCacheBlocks(*config, 1, 1, kv).status().code(), absl::StatusCode::kInvalidArgument);
  kv.block_size = 16;
  EXPECT_EQ(KvCacheBlocks(*config, 1, 3, kv).status().code(),  // 4 KV heads over 3 ranks
            absl::StatusCode::kInvalidArgument);
  kv.num_blocks = 5;  // the layout is checked even with an explicit count
  EXPECT_EQ(KvCacheBlocks(*config, 6, 1, kv).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace orca
