#include "engine/kv/kv_block_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

namespace orca {
namespace {

TEST(KvBlockPoolTest, AllocatesAndFreesExactly) {
  KvBlockPool pool(10, 16);
  EXPECT_EQ(pool.num_free(), 10);
  std::vector<int32_t> got;
  ASSERT_TRUE(pool.Allocate(4, &got).ok());
  EXPECT_EQ(got.size(), 4u);
  EXPECT_EQ(pool.num_used(), 4);
  EXPECT_DOUBLE_EQ(pool.usage(), 0.4);
  std::set<int32_t> unique(got.begin(), got.end());
  EXPECT_EQ(unique.size(), 4u);
  pool.Release(got);
  EXPECT_EQ(pool.num_free(), 10);
}

TEST(KvBlockPoolTest, RefusesOverAllocationAndTakesNothing) {
  KvBlockPool pool(3, 16);
  std::vector<int32_t> got;
  absl::Status s = pool.Allocate(4, &got);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(pool.num_free(), 3);
}

TEST(KvBlockPoolTest, SharedBlocksFreeOnLastRelease) {
  KvBlockPool pool(2, 16);
  std::vector<int32_t> got;
  ASSERT_TRUE(pool.Allocate(1, &got).ok());
  pool.AddRef(got[0]);
  EXPECT_EQ(pool.ref_count(got[0]), 2);
  pool.Release(got);
  EXPECT_EQ(pool.num_free(), 1);
  pool.Release(got);
  EXPECT_EQ(pool.num_free(), 2);
}

// A serving group sizes its cache when it first forms: the engine's pool, made with a
// placeholder count, takes the group's while nothing holds a block, and refuses after.
TEST(KvBlockPoolTest, ResizesOnlyWhileNothingIsHeld) {
  KvBlockPool pool(4, 16);
  ASSERT_TRUE(pool.Resize(300).ok());
  EXPECT_EQ(pool.num_blocks(), 300);
  EXPECT_EQ(pool.num_free(), 300);
  EXPECT_EQ(pool.block_size(), 16);
  std::vector<int32_t> got;
  ASSERT_TRUE(pool.Allocate(300, &got).ok());
  EXPECT_EQ(std::set<int32_t>(got.begin(), got.end()).size(), 300u);
  EXPECT_EQ(*std::max_element(got.begin(), got.end()), 299);
  EXPECT_EQ(pool.Resize(500).code(), absl::StatusCode::kFailedPrecondition) << "blocks in use";
  EXPECT_EQ(pool.num_blocks(), 300);
  pool.RegisterCached(got[0], 42, std::vector<int32_t>(16, 7));
  pool.Release(got);
  EXPECT_EQ(pool.Resize(500).code(), absl::StatusCode::kFailedPrecondition) << "a cached block";
  pool.DropCached();
  ASSERT_TRUE(pool.Resize(2).ok()) << "smaller too";
  EXPECT_EQ(pool.num_free(), 2);
  EXPECT_EQ(pool.Resize(0).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(BlockTableTest, GrowsByBlocksAndMapsSlots) {
  KvBlockPool pool(8, 4);
  BlockTable t;
  ASSERT_TRUE(t.EnsureCapacity(pool, 1).ok());
  EXPECT_EQ(t.blocks().size(), 1u);
  ASSERT_TRUE(t.EnsureCapacity(pool, 4).ok());
  EXPECT_EQ(t.blocks().size(), 1u);
  ASSERT_TRUE(t.EnsureCapacity(pool, 5).ok());
  EXPECT_EQ(t.blocks().size(), 2u);
  EXPECT_EQ(t.Slot(5, 4), t.blocks()[1] * 4 + 1);
  EXPECT_EQ(t.EnsureCapacity(pool, 100).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(t.blocks().size(), 2u);
  t.Release(pool);
  EXPECT_EQ(pool.num_free(), 8);
}

TEST(BlockTableTest, RandomizedChurnNeverLeaks) {
  KvBlockPool pool(64, 16);
  std::mt19937 rng(1);
  std::vector<BlockTable> tables(16);
  std::vector<int64_t> tokens(16, 0);
  for (int step = 0; step < 20000; ++step) {
    size_t i = rng() % tables.size();
    if (rng() % 5 == 0) {
      tables[i].Release(pool);
      tokens[i] = 0;
    } else {
      int64_t want = tokens[i] + 1 + rng() % 40;
      if (tables[i].EnsureCapacity(pool, want).ok()) tokens[i] = want;
    }
    int32_t held = 0;
    std::set<int32_t> all;
    for (const auto& t : tables) {
      held += static_cast<int32_t>(t.blocks().size());
      all.insert(t.blocks().begin(), t.blocks().end());
    }
    ASSERT_EQ(held, pool.num_used());
    ASSERT_EQ(all.size(), static_cast<size_t>(held)) << "a block is owned twice";
  }
  for (auto& t : tables) t.Release(pool);
  EXPECT_EQ(pool.num_free(), 64);
}

}  // namespace
}  // namespace orca
