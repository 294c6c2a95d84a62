// Paged attention on the GPU against the CPU reference over flat mixed batches:
// prefill (causal), chunked prefill and decode sequences in one call, MHA / GQA / MQA
// head layouts (including groups wider than one thread block), head dims that are and
// are not multiples of 4 and 32, shuffled block tables, a strided q.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "tests/kernels/gpu_test_util.h"

namespace orca {
namespace {

using testing::BackendPair;
using testing::Mirrored;
using testing::RandomFloats;

struct SeqShape {
  int32_t q_len, kv_len;
};

struct AttentionCase {
  const char* name;
  int32_t heads, kv_heads, head_dim, block_size;
  std::vector<SeqShape> seqs;
};

void RunCase(BackendPair& b, const AttentionCase& c, std::mt19937& rng) {
  SCOPED_TRACE(c.name);
  const int32_t num_seqs = static_cast<int32_t>(c.seqs.size());
  int32_t max_blocks = 1, total_blocks = 0, tokens = 0, max_q = 0, max_kv = 0;
  for (const SeqShape& s : c.seqs) {
    const int32_t blocks = (s.kv_len + c.block_size - 1) / c.block_size;
    max_blocks = std::max(max_blocks, blocks);
    total_blocks += blocks;
    tokens += s.q_len;
    max_q = std::max(max_q, s.q_len);
    max_kv = std::max(max_kv, s.kv_len);
  }
  const int32_t num_blocks = total_blocks + 3;
  std::vector<int32_t> free_blocks(num_blocks);
  std::iota(free_blocks.begin(), free_blocks.end(), 0);
  std::shuffle(free_blocks.begin(), free_blocks.end(), rng);

  std::vector<int32_t> query_start{0}, kv_len, tables;
  size_t next = 0;
  for (const SeqShape& s : c.seqs) {
    query_start.push_back(query_start.back() + s.q_len);
    kv_len.push_back(s.kv_len);
    const int32_t blocks = (s.kv_len + c.block_size - 1) / c.block_size;
    for (int32_t j = 0; j < max_blocks; ++j) tables.push_back(j < blocks ? free_blocks[next++] : 0);
  }
  auto [cpu_qs, gpu_qs] = b.UploadInts(query_start);
  auto [cpu_kv, gpu_kv] = b.UploadInts(kv_len);
  auto [cpu_tab, gpu_tab] = b.UploadInts(tables);

  const int64_t slots = int64_t{num_blocks} * c.block_size;
  const int64_t kv_width = int64_t{c.kv_heads} * c.head_dim,
                q_width = int64_t{c.heads} * c.head_dim;
  Mirrored k_cache = b.Upload(RandomFloats(rng, slots * kv_width), slots, kv_width);
  Mirrored v_cache = b.Upload(RandomFloats(rng, slots * kv_width), slots, kv_width);
  const int64_t pad = 2 * kv_width;  // q is the first columns of a fused QKV row
  Mirrored qkv =
      b.Upload(RandomFloats(rng, tokens * (q_width + pad), -2.0f, 2.0f), tokens, q_width + pad);
  Mirrored out =
      b.Upload(std::vector<float>(static_cast<size_t>(tokens * q_width)), tokens, q_width);
  b.Poison(out);

  KvCacheShape shape{num_blocks, c.block_size, c.kv_heads, c.head_dim};
  AttentionBatch cpu_batch{num_seqs, cpu_qs, cpu_kv, cpu_tab, max_blocks, max_q, max_kv};
  AttentionBatch gpu_batch{num_seqs, gpu_qs, gpu_kv, gpu_tab, max_blocks, max_q, max_kv};
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim)));
  b.cpu().Attention(qkv.cpu.Cols(0, q_width), k_cache.cpu, v_cache.cpu, cpu_batch, shape, c.heads,
                    scale, out.cpu);
  b.gpu().Attention(qkv.gpu.Cols(0, q_width), k_cache.gpu, v_cache.gpu, gpu_batch, shape, c.heads,
                    scale, out.gpu);
  ORCA_EXPECT_CONSISTENT(b.GpuValues(out.gpu), b.CpuValues(out.cpu), 1e-3);
}

TEST(CudaAttentionTest, MixedBatchesMatchCpu) {
  ORCA_REQUIRE_GPU();
  BackendPair b;
  ASSERT_TRUE(b.ok()) << b.error();
  std::mt19937 rng(11);
  const std::vector<AttentionCase> cases = {
      {"stories260K shape (GQA 2, d 8)", 8, 4, 8, 16, {{37, 37}, {1, 100}, {5, 20}, {1, 1}}},
      {"llama-1b shape (GQA 8, d 64)", 32, 4, 64, 16, {{1, 1000}, {1, 17}, {70, 70}, {33, 300}}},
      {"MHA decode splits keys across warps",
       12,
       12,
       64,
       16,
       {{1, 513}, {20, 20}, {1, 64}, {2, 2}}},
      {"group of 20 spans two blocks (d 128)", 40, 2, 128, 8, {{1, 77}, {9, 40}}},
      {"head dim 6 (no float4)", 6, 3, 6, 4, {{3, 10}, {1, 5}, {4, 4}}},
      {"head dim 80", 5, 5, 80, 16, {{1, 33}, {6, 50}}},
      {"head dim 256", 4, 2, 256, 16, {{1, 50}, {12, 12}}},
      {"decode-only batch", 16, 2, 64, 16, {{1, 5}, {1, 64}, {1, 65}, {1, 129}, {1, 2}, {1, 700}}},
  };
  for (const AttentionCase& c : cases) RunCase(b, c, rng);
}

TEST(CudaAttentionTest, LargeSeqCountsUseTheChunkedScan) {
  ORCA_REQUIRE_GPU();
  BackendPair b;
  ASSERT_TRUE(b.ok()) << b.error();
  std::mt19937 rng(12);
  AttentionCase c{"1500 sequences", 4, 2, 32, 16, {}};
  for (int i = 0; i < 1500; ++i) {
    const int32_t kv = 1 + static_cast<int32_t>(rng() % 40);
    const int32_t q = i % 7 == 0 ? std::min<int32_t>(kv, 3) : 1;
    c.seqs.push_back({q, kv});
  }
  RunCase(b, c, rng);
}

}  // namespace
}  // namespace orca
