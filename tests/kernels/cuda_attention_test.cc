// Paged attention on the GPU against the CPU reference over flat mixed batches:
// prefill (causal), chunked prefill and decode sequences in one call, MHA / GQA / MQA
// head layouts (including groups wider than one thread block), head dims that are and
// are not multiples of 4 and 32, shuffled block tables, a strided q; split-KV
// (flash-decoding) at the key counts around its split boundaries, and its policy; the
// boundaries of the kernel's shared-memory tiles (rows per tile, keys per chunk).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "engine/backend/cuda/cuda_backend.h"
#include "kernels/paged_attention.cuh"
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

// Returns the SM count the CUDA backend sizes its attention grids by.
int DeviceSms(BackendPair& b) {
  int sms = 0;
  const int device = dynamic_cast<CudaBackend&>(b.gpu()).device();
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return sms;
}

// Returns the split-KV split the CUDA backend's launch makes for `c` (its workspace
// always holds the chosen split).
kernels::PagedAttentionSplit SplitFor(const AttentionCase& c, int num_sms) {
  kernels::PagedAttentionParams p;
  p.num_seqs = static_cast<int32_t>(c.seqs.size());
  for (const SeqShape& s : c.seqs) {
    p.num_tokens += s.q_len;
    p.max_query_len = std::max(p.max_query_len, s.q_len);
    p.max_kv_len = std::max(p.max_kv_len, s.kv_len);
  }
  p.num_heads = c.heads;
  p.num_kv_heads = c.kv_heads;
  p.head_dim = c.head_dim;
  p.block_size = c.block_size;
  p.num_sms = num_sms;
  return kernels::ChoosePagedAttentionSplit(p);
}

// `act_dtype`: the type of q and out on the GPU (16-bit activations; the CPU computes
// from the same rounded queries in float32).
void RunCase(BackendPair& b, const AttentionCase& c, std::mt19937& rng,
             DType kv_dtype = DType::kF32, DType act_dtype = DType::kF32) {
  SCOPED_TRACE(c.name);
  SCOPED_TRACE(DTypeName(kv_dtype));
  SCOPED_TRACE(DTypeName(act_dtype));
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
  Mirrored k_cache = b.UploadCache(RandomFloats(rng, slots * kv_width), slots, kv_width, kv_dtype);
  Mirrored v_cache = b.UploadCache(RandomFloats(rng, slots * kv_width), slots, kv_width, kv_dtype);
  const int64_t pad = 2 * kv_width;  // q is the first columns of a fused QKV row
  Mirrored qkv = b.Upload(RandomFloats(rng, tokens * (q_width + pad), -2.0f, 2.0f), tokens,
                          q_width + pad, act_dtype);
  Mirrored out = b.Upload(std::vector<float>(static_cast<size_t>(tokens * q_width)), tokens,
                          q_width, act_dtype);
  b.Poison(out);

  KvCacheShape shape{num_blocks, c.block_size, c.kv_heads, c.head_dim, kv_dtype};
  AttentionBatch cpu_batch{num_seqs, cpu_qs, cpu_kv, cpu_tab, max_blocks, max_q, max_kv};
  AttentionBatch gpu_batch{num_seqs, gpu_qs, gpu_kv, gpu_tab, max_blocks, max_q, max_kv};
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim)));
  b.cpu().Attention(qkv.cpu.Cols(0, q_width), k_cache.cpu, v_cache.cpu, cpu_batch, shape, c.heads,
                    scale, out.cpu);
  b.gpu().Attention(qkv.gpu.Cols(0, q_width), k_cache.gpu, v_cache.gpu, gpu_batch, shape, c.heads,
                    scale, out.gpu);
  // 16-bit outputs: one rounding more (at most 2^-8 relative for bfloat16, 2^-11 for
  // float16).
  ORCA_EXPECT_CONSISTENT(b.GpuValues(out.gpu), b.CpuValues(out.cpu),
                         act_dtype == DType::kBF16 ? 4.5e-3 : 1e-3);
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
  // 16-bit caches (both backends read the same rounded elements): every shape, so both
  // the 16-byte loads (head dims that are multiples of 8) and the scalar ones (6), with
  // and without split-KV.
  for (DType kv : {DType::kF16, DType::kBF16}) {
    for (const AttentionCase& c : cases) RunCase(b, c, rng, kv);
  }
}

// 16-bit queries and output (ModelRunnerOptions::sixteen_bit_activations) over 16-bit
// and float32 caches: mixed batches, and decodes and mixed batches split across keys
// (the merge kernel writes the output then).
TEST(CudaAttentionTest, SixteenBitQueriesAndOutputMatchCpu) {
  ORCA_REQUIRE_GPU();
  BackendPair b;
  ASSERT_TRUE(b.ok()) << b.error();
  const int sms = DeviceSms(b);
  ASSERT_GT(sms, 0);
  std::mt19937 rng(17);
  const std::vector<AttentionCase> cases = {
      {"llama-1b shape (GQA 8, d 64)", 32, 4, 64, 16, {{1, 1000}, {1, 17}, {70, 70}, {33, 300}}},
      {"head dim 6 (no float4)", 6, 3, 6, 4, {{3, 10}, {1, 5}, {4, 4}}},
      {"decode, split", 16, 2, 64, 16, {{1, 2049}, {1, 700}}},
      {"mixed, split", 8, 2, 128, 8, {{9, 777}, {1, 2999}, {4, 260}}},
  };
  EXPECT_GT(SplitFor(cases[2], sms).num_splits, 1);
  EXPECT_GT(SplitFor(cases[3], sms).num_splits, 1);
  for (DType act : {DType::kF16, DType::kBF16}) {
    for (DType kv : {DType::kF32, act}) {
      for (const AttentionCase& c : cases) RunCase(b, c, rng, kv, act);
    }
  }
}

// The split-KV workspace grows with the batch; when it moves, the backend's workspace
// generation changes, so that CUDA graphs naming the old buffer are recorded again
// (ModelRunner::RunGraph) instead of writing into freed memory.
TEST(CudaAttentionTest, WorkspaceMovesChangeTheGeneration) {
  ORCA_REQUIRE_GPU();
  BackendPair b;
  ASSERT_TRUE(b.ok()) << b.error();
  std::mt19937 rng(15);
  const AttentionCase one{"one decode", 8, 4, 8, 16, {{1, 40}}};
  RunCase(b, one, rng);
  const int64_t generation = b.gpu().workspace_generation();
  RunCase(b, one, rng);
  EXPECT_EQ(b.gpu().workspace_generation(), generation) << "nothing grew";
  AttentionCase many{"forty decodes", 8, 4, 8, 16, {}};
  for (int i = 0; i < 40; ++i) many.seqs.push_back({1, 300});
  RunCase(b, many, rng);
  EXPECT_GT(b.gpu().workspace_generation(), generation);
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

TEST(CudaAttentionTest, SplitKvPolicy) {
  auto params = [](int32_t seqs, int32_t q_len, int32_t kv_len, int32_t heads, int32_t kv_heads,
                   int32_t sms) {
    kernels::PagedAttentionParams p;
    p.num_seqs = seqs;
    p.num_tokens = int64_t{seqs} * q_len;
    p.max_query_len = q_len;
    p.max_kv_len = kv_len;
    p.num_heads = heads;
    p.num_kv_heads = kv_heads;
    p.head_dim = 64;
    p.block_size = 16;
    p.num_sms = sms;
    return p;
  };
  // llama-1B decode at batch 1 on 132 SMs: 4 blocks, so as many 32+-key splits as fit,
  // at most 32.
  kernels::PagedAttentionSplit s =
      kernels::ChoosePagedAttentionSplit(params(1, 1, 512, 32, 4, 132));
  EXPECT_EQ(s.num_splits, 16);
  EXPECT_EQ(s.keys_per_split, 32);
  s = kernels::ChoosePagedAttentionSplit(params(1, 1, 4096, 32, 4, 132));
  EXPECT_EQ(s.num_splits, 32);
  EXPECT_EQ(s.keys_per_split, 128);
  s = kernels::ChoosePagedAttentionSplit(params(1, 1, 100000, 32, 4, 132));
  EXPECT_LE(s.num_splits, 32);
  EXPECT_GE(int64_t{s.num_splits} * s.keys_per_split, 100000);
  EXPECT_EQ(s.keys_per_split % 32, 0);
  // Too few keys, no SM count, no kv bound, or a grid that already fills the device.
  EXPECT_EQ(kernels::ChoosePagedAttentionSplit(params(1, 1, 63, 32, 4, 132)).num_splits, 1);
  EXPECT_EQ(kernels::ChoosePagedAttentionSplit(params(1, 1, 4096, 32, 4, 0)).num_splits, 1);
  EXPECT_EQ(kernels::ChoosePagedAttentionSplit(params(1, 1, 0, 32, 4, 132)).num_splits, 1);
  EXPECT_EQ(kernels::ChoosePagedAttentionSplit(params(66, 1, 4096, 32, 4, 132)).num_splits, 1);
  EXPECT_EQ(kernels::ChoosePagedAttentionSplit(params(1, 2048, 2048, 32, 4, 132)).num_splits, 1);
  // Every choice fits the fixed workspace a backend allocates.
  for (int32_t seqs : {1, 2, 7, 16, 64}) {
    for (int32_t q_len : {1, 3, 16, 64}) {
      for (int32_t kv : {512, 1000, 4096, 65536}) {
        for (int32_t sms : {1, 8, 132}) {
          const kernels::PagedAttentionParams p = params(seqs, q_len, kv, 32, 4, sms);
          s = kernels::ChoosePagedAttentionSplit(p);
          EXPECT_LE(kernels::PagedAttentionWorkspaceBytes(seqs, p.num_tokens, 32, 64, s.num_splits),
                    kernels::PagedAttentionFixedWorkspaceBytes(seqs, 64, sms))
              << seqs << " x " << q_len << " over " << kv << " on " << sms << " SMs";
        }
      }
    }
  }
}

// Decode batches (and mixed ones) whose key ranges are split across blocks: key counts
// below, at and around the split size, one split exactly, uneven last splits, lengths
// off the block size, GQA groups 1/4/8, head dims 64/80/128.
TEST(CudaAttentionTest, SplitKvMatchesCpu) {
  ORCA_REQUIRE_GPU();
  BackendPair b;
  ASSERT_TRUE(b.ok()) << b.error();
  const int sms = DeviceSms(b);
  ASSERT_GT(sms, 0);
  std::mt19937 rng(13);
  const int32_t max_kvs[] = {512, 700, 1000, 2049, 4096, 300};
  int batches = 0, split_batches = 0;
  for (int32_t group : {1, 4, 8}) {
    for (int32_t head_dim : {64, 80, 128}) {
      const int32_t kv_heads = 2;
      for (int32_t num_seqs : {1, 2, 5, 8}) {
        const int32_t max_kv = max_kvs[(batches++) % std::size(max_kvs)];
        AttentionCase c{"decode", group * kv_heads, kv_heads, head_dim, 16, {{1, max_kv}}};
        const kernels::PagedAttentionSplit split = SplitFor(c, sms);
        const int32_t kps = split.num_splits > 1 ? split.keys_per_split : max_kv;
        const int32_t others[] = {1,           kps - 1,    kps, kps + 1,
                                  2 * kps - 3, max_kv - 1, 17,  2 * kps + 31};
        for (int32_t i = 1; i < num_seqs; ++i) {
          const int32_t pick = others[(i + batches) % std::size(others)];
          c.seqs.push_back({1, std::clamp(pick, 1, max_kv)});
        }
        if (SplitFor(c, sms).num_splits > 1) ++split_batches;
        const std::string name =
            "group " + std::to_string(group) + ", d " + std::to_string(head_dim) + ", " +
            std::to_string(num_seqs) + " seqs up to " + std::to_string(max_kv) + " keys, " +
            std::to_string(split.num_splits) + " splits of " + std::to_string(split.keys_per_split);
        c.name = name.c_str();
        RunCase(b, c, rng);
      }
    }
  }
  EXPECT_GE(split_batches, batches * 2 / 3) << "most batches should take the split-KV path";

  // Prefill chunks and decodes in one split launch.
  const std::vector<AttentionCase> mixed = {
      {"mixed, GQA 8", 16, 2, 64, 16, {{16, 2000}, {1, 4096}, {5, 600}, {1, 1}, {3, 3}, {1, 257}}},
      {"mixed, MHA", 4, 4, 80, 16, {{7, 1300}, {1, 511}, {2, 1024}, {12, 12}}},
      {"mixed, GQA 4, block 8", 8, 2, 128, 8, {{9, 777}, {1, 2999}, {4, 260}}},
  };
  for (const AttentionCase& c : mixed) {
    EXPECT_GT(SplitFor(c, sms).num_splits, 1) << c.name;
    RunCase(b, c, rng);
  }
}

// Query rows per thread block of a prefill tile for a GQA group and head dim: mirrors
// the kernel's tile shape (paged_attention.cu, TileShapeFor: 8 warps x 8/4/1 (row,
// head) pairs per warp for head dims up to 64/128/256; decode-only batches with groups
// up to 8 take one pair per warp). Should the two drift apart, the boundaries below
// move, nothing breaks.
int32_t RowsPerTile(int32_t group, int32_t head_dim) {
  const int32_t pairs = 8 * (head_dim <= 64 ? 8 : head_dim <= 128 ? 4 : 1);
  return pairs / std::min(group, pairs);
}

// The boundaries of the shared-memory decomposition: prefill rows around the tile's
// row count (causal masks inside a tile), key counts around the shared chunk (32 keys
// per warp part, up to 256 when 8 warps share one pair), head dims that are not
// multiples of 4 (scalar loads, odd row strides), GQA groups 1/2/8/16/20 (one pair per
// block up to groups split over blocks), with and without split-KV.
TEST(CudaAttentionTest, SharedChunkBoundariesMatchCpu) {
  ORCA_REQUIRE_GPU();
  BackendPair b;
  ASSERT_TRUE(b.ok()) << b.error();
  const int sms = DeviceSms(b);
  ASSERT_GT(sms, 0);
  std::mt19937 rng(14);
  struct Layout {
    int32_t group, kv_heads, head_dim, block_size;
  };
  const Layout layouts[] = {
      {1, 3, 64, 16}, {2, 2, 34, 16},   {8, 2, 64, 16},
      {16, 1, 32, 8}, {20, 2, 130, 16}, {8, 1, 6, 4},
  };
  for (const Layout& lay : layouts) {
    const int32_t heads = lay.group * lay.kv_heads;
    const int32_t rows = RowsPerTile(lay.group, lay.head_dim);
    const std::string shape = "group " + std::to_string(lay.group) + ", d " +
                              std::to_string(lay.head_dim) + ", " + std::to_string(rows) +
                              " rows per tile";
    // Prefill (q_len == kv_len) and chunked prefill around the tile's row count.
    AttentionCase prefill{nullptr, heads, lay.kv_heads, lay.head_dim, lay.block_size, {}};
    for (int32_t q : {1, rows - 1, rows, rows + 1, 2 * rows + 1}) {
      if (q >= 1) prefill.seqs.push_back({q, q});
    }
    prefill.seqs.push_back({rows + 1, rows + 40});
    prefill.seqs.push_back({std::max(rows - 1, 1), 257});
    const std::string prefill_name = shape + ", prefill";
    prefill.name = prefill_name.c_str();
    RunCase(b, prefill, rng);

    // Decode key counts around the shared chunk sizes.
    AttentionCase decode{nullptr, heads, lay.kv_heads, lay.head_dim, lay.block_size, {}};
    for (int32_t kv : {1, 31, 32, 33, 63, 64, 65, 127, 129, 255, 256, 257}) {
      decode.seqs.push_back({1, kv});
    }
    const std::string decode_name = shape + ", decode";
    decode.name = decode_name.c_str();
    RunCase(b, decode, rng);

    // A batch whose grid fills the device: the single pass without split-KV, prefill
    // tiles and decodes mixed.
    AttentionCase full{nullptr, heads, lay.kv_heads, lay.head_dim, lay.block_size, {}};
    full.seqs.push_back({3 * rows + 2, 3 * rows + 70});
    const int32_t kvs[] = {1, 33, 96, 257, 130, 65};
    while (SplitFor(full, sms).num_splits > 1) {
      full.seqs.push_back({1, kvs[full.seqs.size() % std::size(kvs)]});
    }
    const std::string full_name = shape + ", " + std::to_string(full.seqs.size()) + " seqs";
    full.name = full_name.c_str();
    EXPECT_EQ(SplitFor(full, sms).num_splits, 1) << full.name;
    RunCase(b, full, rng);
  }
}

}  // namespace
}  // namespace orca
