#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/internal/device_utils.cuh"
#include "kernels/paged_attention.cuh"

namespace orca::kernels {
namespace {

using internal::kFullMask;

constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
constexpr int kKeysPerChunk = 32;                      // one key per lane in Q.K
constexpr int kMaxChunkKeys = kKeysPerChunk * kWarps;  // a shared chunk, all warp parts
// Dynamic shared memory a block may use: 48 KiB without opt-in, less the slot table.
constexpr int kSmemFloats = (48 * 1024 - kMaxChunkKeys * 8) / 4;
constexpr int kScanThreads = 1024;
constexpr int kMaxHeadDim = 256;
// Split-KV: splits of at least kMinKeysPerSplit keys (a multiple of kKeysPerChunk), at
// most kMaxSplits (one lane each in the merge), up to kSplitTargetPerSm blocks per SM
// and kSplitPairsPerSm partial (row, head) states per SM (what bounds the workspace).
constexpr int kMinKeysPerSplit = 32;
constexpr int kMaxSplits = kPagedAttentionMaxSplits;
constexpr int kSplitTargetPerSm = 2;
constexpr int kSplitPairsPerSm = 64;
constexpr int kMergeWarps = 4;
constexpr size_t kWorkspaceAlign = 256;

size_t AlignUp(size_t n) { return (n + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign; }

// Where a launch's partial states live: [num_splits][num_tokens][num_heads] x (max,
// sum) and x head_dim accumulator columns.
struct SplitState {
  int32_t keys_per_split = 0;  // 0: no split-KV, the kernel writes `out`
  float* ml = nullptr;
  float* acc = nullptr;
};

// The tile layout of a launch (the same arithmetic on host and device).
struct TileShape {
  int32_t pairs_per_warp, heads_per_block, rows_per_tile, blocks_per_group;
};

// (Row, head) pairs per warp for a head dim: what the accumulators' registers allow
// (kEpl floats per pair per lane) and what keeps the queries (pairs x head_dim floats)
// plus one chunk of K in 48 KiB of shared memory.
constexpr int PairsPerWarp(int32_t head_dim) {
  return head_dim <= 64 ? 8 : head_dim <= 128 ? 4 : 1;
}

// Returns the tile layout of a launch. Batches whose every tile has at most kWarps
// pairs (decode with a GQA group of up to 8, by the max_query_len hint) get the
// one-pair-per-warp kernel, whose registers leave room for more resident blocks; a
// wrong hint only makes more, smaller tiles.
TileShape TileShapeFor(const PagedAttentionParams& p) {
  const int32_t group = p.num_heads / p.num_kv_heads;
  TileShape t;
  t.pairs_per_warp = p.max_query_len > 0 && int64_t{group} * p.max_query_len <= kWarps
                         ? 1
                         : PairsPerWarp(p.head_dim);
  const int32_t pairs_per_block = kWarps * t.pairs_per_warp;
  t.heads_per_block = group < pairs_per_block ? group : pairs_per_block;
  t.rows_per_tile = pairs_per_block / t.heads_per_block;
  t.blocks_per_group = (group + t.heads_per_block - 1) / t.heads_per_block;
  return t;
}

// An upper bound on the row tiles of a batch (each sequence's last tile may be partial).
int64_t MaxTiles(int64_t num_tokens, int32_t num_seqs, int32_t rows_per_tile) {
  return (num_tokens + rows_per_tile - 1) / rows_per_tile + num_seqs;
}

// Returns the split of `max_kv_len` keys into about `splits` chunks of whole 32-key
// chunks.
PagedAttentionSplit SplitKeys(int32_t max_kv_len, int64_t splits) {
  if (splits < 2) return {};
  int64_t keys = (max_kv_len + splits - 1) / splits;
  keys = (keys + kKeysPerChunk - 1) / kKeysPerChunk * kKeysPerChunk;
  PagedAttentionSplit out;
  out.num_splits = static_cast<int32_t>((max_kv_len + keys - 1) / keys);
  out.keys_per_split = static_cast<int32_t>(keys);
  if (out.num_splits < 2) return {};
  return out;
}

// tile_start[s] = number of row tiles of the sequences before s; tile_start[num_seqs] is
// the total. One block; a chunked Hillis-Steele scan.
__global__ void TileStartKernel(const int32_t* __restrict__ query_start, int32_t num_seqs,
                                int32_t rows_per_tile, int32_t* __restrict__ tile_start) {
  __shared__ int32_t buf[kScanThreads];
  __shared__ int32_t carry;
  const int tid = threadIdx.x;
  if (tid == 0) {
    carry = 0;
    tile_start[0] = 0;
  }
  __syncthreads();
  for (int32_t base = 0; base < num_seqs; base += kScanThreads) {
    const int32_t s = base + tid;
    int32_t tiles = 0;
    if (s < num_seqs) {
      const int32_t q_len = query_start[s + 1] - query_start[s];
      tiles = q_len > 0 ? (q_len + rows_per_tile - 1) / rows_per_tile : 0;
    }
    buf[tid] = tiles;
    __syncthreads();
    for (int off = 1; off < kScanThreads; off <<= 1) {
      const int32_t add = tid >= off ? buf[tid - off] : 0;
      __syncthreads();
      buf[tid] += add;
      __syncthreads();
    }
    if (s < num_seqs) tile_start[s + 1] = carry + buf[tid];
    __syncthreads();
    if (tid == kScanThreads - 1) carry += buf[tid];
    __syncthreads();
  }
}

// How a block of `num_pairs` (row, head) pairs lays out the `smem_floats` floats of
// dynamic shared memory after the warps' probability rows: the shared key chunk is
// `split` x 32 keys (one 32-key slice per warp part), K and V get a buffer each when
// both fit (`together`), else V reuses K's after the scores are taken (wide heads with
// many pairs); the pre-scaled queries follow. Block-uniform.
struct ChunkLayout {
  int32_t split;   // warps sharing one pair (1, 2, 4 or 8), each on its 32-key slice
  int32_t stride;  // floats per key row in the buffers: head_dim + 4 (float4) or + 1
  bool together;   // K and V buffers side by side
};

__host__ __device__ constexpr int32_t ChunkRowStride(int32_t d, bool vec4) {
  // Padding keeps lane = key reads conflict-free: a quarter-warp's float4 rows (or a
  // warp's scalar rows) land on distinct banks.
  return vec4 ? d + 4 : d + 1;
}

__host__ __device__ inline int32_t SplitFor(int32_t num_pairs) {
  int32_t split = 1;
  while (split * 2 * num_pairs <= kWarps) split *= 2;
  return split;
}

// Floats a block of `num_pairs` pairs needs with `split` warp parts, K and V together
// (or, with together false, V reusing K's buffer).
__host__ __device__ constexpr int64_t ChunkFloats(int32_t num_pairs, int32_t d, int32_t stride,
                                                  int32_t split, bool together) {
  return int64_t{num_pairs} * d + int64_t{together ? 2 : 1} * kKeysPerChunk * split * stride;
}

__host__ __device__ inline ChunkLayout LayoutFor(int32_t num_pairs, int32_t d, bool vec4,
                                                 int32_t smem_floats) {
  ChunkLayout c;
  c.stride = ChunkRowStride(d, vec4);
  // Fewer warp parts rather than serialising the K and V loads; V reuses K's buffer
  // only when even one 32-key slice of each does not fit.
  c.split = SplitFor(num_pairs);
  while (c.split > 1 && ChunkFloats(num_pairs, d, c.stride, c.split, true) > smem_floats) {
    c.split /= 2;
  }
  c.together = ChunkFloats(num_pairs, d, c.stride, c.split, true) <= smem_floats;
  return c;
}

// Copies keys [base, base + keys) of the chunk, the head_dim elements at `row_s[key]` of
// `cache`, into `buf` as float (zeros past key_end, so no poison reaches an FMA). vec4:
// 16-byte loads and float4 stores (float caches: 4 elements; 16-bit caches: 8, widened),
// where head_dim and the cache allow them (VectorLoads).
template <typename T>
__device__ inline void LoadChunkOf(const T* __restrict__ cache, const long long* row_s,
                                   int32_t base, int32_t keys, int32_t key_end, int32_t d,
                                   bool vec4, int32_t stride, float* buf) {
  if (vec4) {
    constexpr int32_t kPer = 16 / sizeof(T);  // elements per 16-byte load
    const int32_t dv = d / kPer;
    for (int32_t idx = threadIdx.x; idx < keys * dv; idx += kThreads) {
      const int32_t key = idx / dv, c = (idx - key * dv) * kPer;
      float4* out = reinterpret_cast<float4*>(buf + key * stride + c);
      if constexpr (std::is_same_v<T, float>) {
        float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (base + key < key_end) v = *reinterpret_cast<const float4*>(cache + row_s[key] + c);
        out[0] = v;
      } else {
        uint4 raw = make_uint4(0u, 0u, 0u, 0u);  // 16-bit zeros are 0.0
        if (base + key < key_end) raw = *reinterpret_cast<const uint4*>(cache + row_s[key] + c);
        const T* e = reinterpret_cast<const T*>(&raw);
        out[0] = make_float4(internal::ToFloat(e[0]), internal::ToFloat(e[1]),
                             internal::ToFloat(e[2]), internal::ToFloat(e[3]));
        out[1] = make_float4(internal::ToFloat(e[4]), internal::ToFloat(e[5]),
                             internal::ToFloat(e[6]), internal::ToFloat(e[7]));
      }
    }
    return;
  }
  for (int32_t idx = threadIdx.x; idx < keys * d; idx += kThreads) {
    const int32_t key = idx / d, c = idx - key * d;
    buf[key * stride + c] = base + key < key_end ? internal::ToFloat(cache[row_s[key] + c]) : 0.0f;
  }
}

// LoadChunkOf for the cache's element type.
__device__ inline void LoadChunk(const void* cache, ScalarType type, const long long* row_s,
                                 int32_t base, int32_t keys, int32_t key_end, int32_t d, bool vec4,
                                 int32_t stride, float* buf) {
  switch (type) {
    case ScalarType::kF16:
      return LoadChunkOf(static_cast<const __half*>(cache), row_s, base, keys, key_end, d, vec4,
                         stride, buf);
    case ScalarType::kBF16:
      return LoadChunkOf(static_cast<const __nv_bfloat16*>(cache), row_s, base, keys, key_end, d,
                         vec4, stride, buf);
    default:
      return LoadChunkOf(static_cast<const float*>(cache), row_s, base, keys, key_end, d, vec4,
                         stride, buf);
  }
}

// Whether a chunk is copied with 16-byte loads (and kept in the float4 layout): head_dim
// a whole number of loads (4 floats or 8 16-bit elements) and 16-byte aligned caches, so
// every row (a multiple of head_dim elements from the start) is aligned too.
__device__ inline bool VectorLoads(const PagedAttentionParams& p) {
  const int32_t per = p.kv_type == ScalarType::kF32 ? 4 : 8;
  return p.head_dim % per == 0 && (reinterpret_cast<uintptr_t>(p.k_cache) & 15) == 0 &&
         (reinterpret_cast<uintptr_t>(p.v_cache) & 15) == 0;
}

// kEpl: output columns per lane (head_dim <= 32 * kEpl); kPpw: (row, head) pairs per
// warp, so a block holds up to kWarps * kPpw pairs.
template <int kEpl, int kPpw>
__global__ void __launch_bounds__(kThreads)
    PagedAttentionKernel(PagedAttentionParams p, const int32_t* __restrict__ tile_start,
                         int32_t heads_per_block, int32_t rows_per_tile, int32_t smem_floats,
                         SplitState split_kv) {
  extern __shared__ float4 smem4[];  // float4: 16-byte alignment for the vector loads
  float* smem = reinterpret_cast<float*>(smem4);
  // Where the next chunk's keys of this kv head start in the cache (element offsets;
  // the layout is KvCacheShape's: [block][kv head][offset in block][head_dim]).
  __shared__ long long row_s[kMaxChunkKeys];
  const int32_t d = p.head_dim;

  // Which sequence and rows: the last sequence whose first tile is <= this tile.
  const int32_t tile = static_cast<int32_t>(blockIdx.x);
  if (tile >= tile_start[p.num_seqs]) return;
  int32_t lo = 0, hi = p.num_seqs - 1;
  while (lo < hi) {
    const int32_t mid = (lo + hi + 1) >> 1;
    if (tile_start[mid] <= tile) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  const int32_t seq = lo;
  const int32_t q_begin = p.query_start[seq];
  const int32_t q_len = p.query_start[seq + 1] - q_begin;
  const int32_t kv_len = p.kv_len[seq];
  const int32_t row0 = (tile - tile_start[seq]) * rows_per_tile;
  const int32_t rows = min(rows_per_tile, q_len - row0);

  // Which heads: a slice of the query heads that share one KV head.
  const int32_t group = p.num_heads / p.num_kv_heads;
  const int32_t blocks_per_group = (group + heads_per_block - 1) / heads_per_block;
  const int32_t kv_head = static_cast<int32_t>(blockIdx.y) / blocks_per_group;
  const int32_t head_off = (static_cast<int32_t>(blockIdx.y) % blocks_per_group) * heads_per_block;
  const int32_t head0 = kv_head * group + head_off;
  const int32_t heads = min(heads_per_block, group - head_off);
  const int32_t num_pairs = rows * heads;  // (row, head) pairs, 1 .. kWarps * kPpw

  const bool vec4 = VectorLoads(p);
  // smem_floats: what follows the per-warp probability rows.
  const ChunkLayout layout = LayoutFor(num_pairs, d, vec4, smem_floats);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int32_t split = layout.split, stride = layout.stride;
  const int32_t chunk_keys = kKeysPerChunk * split;
  float* prob_s = smem + warp * kPpw * kKeysPerChunk;  // this warp's [kPpw][32] weights
  float* k_s = smem + kWarps * kPpw * kKeysPerChunk;   // [chunk_keys][stride]
  float* v_s = layout.together ? k_s + chunk_keys * stride : k_s;
  float* q_s = k_s + (layout.together ? 2 : 1) * chunk_keys * stride;  // [num_pairs][d]

  for (int32_t idx = threadIdx.x; idx < num_pairs * d; idx += kThreads) {
    const int32_t pair = idx / d, c = idx - pair * d;
    const int32_t r = pair / heads, h = head0 + pair % heads;
    q_s[idx] = internal::LoadAs(p.q, p.q_type,
                                static_cast<int64_t>(q_begin + row0 + r) * p.q_ld +
                                    static_cast<int64_t>(h) * d + c) *
               p.scale;
  }

  // Pairs of this warp; with fewer pairs than warps, `split` warps share a pair and
  // each takes its own 32-key slice of every chunk.
  const int groups = kWarps / split;
  const int my_group = warp / split, part = warp % split;
  int32_t pair_of[kPpw];   // -1: none
  int32_t last_key[kPpw];  // causal limit: the pair's own position
#pragma unroll
  for (int i = 0; i < kPpw; ++i) {
    const int32_t pair = my_group + i * groups;
    const bool has = pair < num_pairs;
    pair_of[i] = has ? pair : -1;
    last_key[i] = has ? kv_len - q_len + row0 + pair / heads : -1;
  }
  // The block's key range (block-uniform: every thread loads and passes the barriers):
  // up to the tile's last row's position.
  int32_t key_end = min(kv_len, kv_len - q_len + row0 + rows);

  // Split-KV: this block's share of the key range; the last split runs to the end.
  int32_t key_begin = 0;
  const int32_t num_splits = static_cast<int32_t>(gridDim.z);
  const int32_t split_idx = static_cast<int32_t>(blockIdx.z);
  if (num_splits > 1) {
    key_begin = split_idx * split_kv.keys_per_split;
    if (split_idx + 1 < num_splits) key_end = min(key_end, key_begin + split_kv.keys_per_split);
  }

  const int32_t* table = p.block_tables + static_cast<int64_t>(seq) * p.max_blocks_per_seq;
  auto fill_slots = [&](int32_t base) {
    const int32_t k = static_cast<int32_t>(threadIdx.x);
    if (k < chunk_keys) {
      const int32_t j = base + k;
      row_s[k] =
          j < key_end
              ? ((static_cast<long long>(table[j / p.block_size]) * p.num_kv_heads + kv_head) *
                     p.block_size +
                 j % p.block_size) *
                    d
              : 0;
    }
  };

  float m[kPpw], l[kPpw], acc[kPpw][kEpl];
#pragma unroll
  for (int i = 0; i < kPpw; ++i) {
    m[i] = -INFINITY;
    l[i] = 0.0f;
#pragma unroll
    for (int e = 0; e < kEpl; ++e) acc[i][e] = 0.0f;
  }

  fill_slots(key_begin);
  __syncthreads();  // q_s and the first chunk's slots
  for (int32_t base = key_begin; base < key_end; base += chunk_keys) {
    // Every row of the buffers is written (zeros past key_end): P.V reads whole slices.
    LoadChunk(p.k_cache, p.kv_type, row_s, base, chunk_keys, key_end, d, vec4, stride, k_s);
    if (layout.together) {
      LoadChunk(p.v_cache, p.kv_type, row_s, base, chunk_keys, key_end, d, vec4, stride, v_s);
    }
    __syncthreads();  // the chunk is in shared memory; row_s is free again

    // Q.K: lane = key of this warp's slice.
    const int32_t slice = kKeysPerChunk * part;
    const int32_t j = base + slice + lane;
    const bool in_range = j < key_end;
    const float* krow = k_s + (slice + lane) * stride;
    float score[kPpw];
#pragma unroll
    for (int i = 0; i < kPpw; ++i) score[i] = 0.0f;
    if (vec4) {
#pragma unroll 4
      for (int32_t c = 0; c < d; c += 4) {
        const float4 k4 = *reinterpret_cast<const float4*>(krow + c);
#pragma unroll
        for (int i = 0; i < kPpw; ++i) {
          if (pair_of[i] < 0) continue;
          const float4 q4 = *reinterpret_cast<const float4*>(q_s + pair_of[i] * d + c);
          score[i] += q4.x * k4.x + q4.y * k4.y + q4.z * k4.z + q4.w * k4.w;
        }
      }
    } else {
      for (int32_t c = 0; c < d; ++c) {
        const float kc = krow[c];
#pragma unroll
        for (int i = 0; i < kPpw; ++i) {
          if (pair_of[i] >= 0) score[i] += q_s[pair_of[i] * d + c] * kc;
        }
      }
    }

    // Online softmax update per pair (all branches are warp-uniform).
    float prob[kPpw];
#pragma unroll
    for (int i = 0; i < kPpw; ++i) {
      prob[i] = 0.0f;
      if (pair_of[i] < 0) continue;
      const bool allowed = in_range && j <= last_key[i];
      const float s = allowed ? score[i] : -INFINITY;
      const float chunk_max = internal::WarpMax(s);
      if (chunk_max == -INFINITY) continue;  // no key of this slice is visible to the pair
      const float m_new = fmaxf(m[i], chunk_max);
      const float alpha = expf(m[i] - m_new);
      prob[i] = allowed ? expf(s - m_new) : 0.0f;
      l[i] = l[i] * alpha + internal::WarpSum(prob[i]);
      m[i] = m_new;
#pragma unroll
      for (int e = 0; e < kEpl; ++e) acc[i][e] *= alpha;
    }

    if (!layout.together) {
      __syncthreads();  // every warp has its scores: K's buffer may take V
      LoadChunk(p.v_cache, p.kv_type, row_s, base, chunk_keys, key_end, d, vec4, stride, v_s);
      __syncthreads();
    }
    // Both paths: every thread is past its last row_s read of this chunk.
    if (base + chunk_keys < key_end) fill_slots(base + chunk_keys);

    // P.V: lane = output column; each V row of the slice is read from shared memory
    // once for all pairs of the warp, 4 rows at a time, and the pairs' weights of those
    // rows as one float4 broadcast from the warp's probability rows (rows past the
    // slice's keys are zeros with probability 0).
    for (int i = 0; i < kPpw; ++i) prob_s[i * kKeysPerChunk + lane] = prob[i];
    __syncwarp();
    constexpr int kPvUnroll = 4;
    const int32_t slice_keys = min(kKeysPerChunk, key_end - base - slice);
    for (int32_t jj = 0; jj < slice_keys; jj += kPvUnroll) {
      float v[kPvUnroll][kEpl];
#pragma unroll
      for (int u = 0; u < kPvUnroll; ++u) {
        const float* vrow = v_s + (slice + jj + u) * stride;
#pragma unroll
        for (int e = 0; e < kEpl; ++e) {
          const int32_t c = lane + 32 * e;
          v[u][e] = c < d ? vrow[c] : 0.0f;
        }
      }
#pragma unroll
      for (int i = 0; i < kPpw; ++i) {
        if (pair_of[i] < 0) continue;
        const float4 w = *reinterpret_cast<const float4*>(prob_s + i * kKeysPerChunk + jj);
#pragma unroll
        for (int e = 0; e < kEpl; ++e) {
          acc[i][e] += w.x * v[0][e] + w.y * v[1][e] + w.z * v[2][e] + w.w * v[3][e];
        }
      }
    }
    __syncthreads();  // the buffers and the next chunk's slots
  }

  // Writes a pair's result: normalised into `out`, or with split-KV its partial state
  // (every split writes every pair, an empty key range as max -inf and sum 0).
  auto emit = [&](int32_t pair, const float(&a)[kEpl], float m_pair, float l_pair) {
    const int32_t r = pair / heads, h = head0 + pair % heads;
    const int64_t t = q_begin + row0 + r;
    if (split_kv.keys_per_split > 0) {
      const int64_t idx = (static_cast<int64_t>(split_idx) * p.num_tokens + t) * p.num_heads + h;
      float* o = split_kv.acc + idx * d;
#pragma unroll
      for (int e = 0; e < kEpl; ++e) {
        const int32_t c = lane + 32 * e;
        if (c < d) o[c] = a[e];
      }
      if (lane == 0) {
        split_kv.ml[2 * idx] = m_pair;
        split_kv.ml[2 * idx + 1] = l_pair;
      }
      return;
    }
    const int64_t o = t * p.out_ld + static_cast<int64_t>(h) * d;
    const float inv = l_pair > 0.0f ? 1.0f / l_pair : 0.0f;
#pragma unroll
    for (int e = 0; e < kEpl; ++e) {
      const int32_t c = lane + 32 * e;
      if (c < d) internal::StoreAs(p.out, p.out_type, o + c, a[e] * inv);
    }
  };

  if (split > 1) {
    // Here every warp owns at most pair_of[0]; merge the parts' states through the
    // (now free) chunk buffer: [kWarps][d + 2] acc, max, sum.
    float* merge_s = k_s;
    float* mine = merge_s + warp * (d + 2);
    if (pair_of[0] >= 0) {
#pragma unroll
      for (int e = 0; e < kEpl; ++e) {
        const int32_t c = lane + 32 * e;
        if (c < d) mine[c] = acc[0][e];
      }
      if (lane == 0) {
        mine[d] = m[0];
        mine[d + 1] = l[0];
      }
    }
    __syncthreads();
    if (part == 0 && pair_of[0] >= 0) {
      float m_tot = -INFINITY;
      for (int k = 0; k < split; ++k) m_tot = fmaxf(m_tot, merge_s[(warp + k) * (d + 2) + d]);
      float l_tot = 0.0f;
      float total[kEpl];
#pragma unroll
      for (int e = 0; e < kEpl; ++e) total[e] = 0.0f;
      for (int k = 0; k < split; ++k) {
        const float* other = merge_s + (warp + k) * (d + 2);
        const float w = other[d] == -INFINITY ? 0.0f : expf(other[d] - m_tot);
        l_tot += w * other[d + 1];
#pragma unroll
        for (int e = 0; e < kEpl; ++e) {
          const int32_t c = lane + 32 * e;
          if (c < d) total[e] += w * other[c];
        }
      }
      emit(pair_of[0], total, m_tot, l_tot);
    }
    return;
  }

#pragma unroll
  for (int i = 0; i < kPpw; ++i) {
    if (pair_of[i] >= 0) emit(pair_of[i], acc[i], m[i], l[i]);
  }
}

// Split-KV merge: one warp per (row, head) of the batch; lane z reads split z's max and
// sum, and the accumulators are combined with weights exp(max_z - max).
template <int kEpl>
__global__ void __launch_bounds__(32 * kMergeWarps)
    MergeSplitsKernel(PagedAttentionParams p, int32_t num_splits, const float* __restrict__ ml,
                      const float* __restrict__ part_acc) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t pair = static_cast<int64_t>(blockIdx.x) * kMergeWarps + warp;
  if (pair >= p.num_tokens * p.num_heads) return;
  const int64_t t = pair / p.num_heads;
  const int32_t h = static_cast<int32_t>(pair - t * p.num_heads);
  // Rows outside every sequence have no partials (and are not written).
  if (t < p.query_start[0] || t >= p.query_start[p.num_seqs]) return;
  const int32_t d = p.head_dim;
  const int64_t split_stride = p.num_tokens * p.num_heads;

  float m = -INFINITY, l = 0.0f;
  if (lane < num_splits) {
    m = ml[2 * (lane * split_stride + pair)];
    l = ml[2 * (lane * split_stride + pair) + 1];
  }
  const float m_tot = internal::WarpMax(m);
  const float w = m == -INFINITY ? 0.0f : expf(m - m_tot);
  const float l_tot = internal::WarpSum(w * l);

  float total[kEpl];
#pragma unroll
  for (int e = 0; e < kEpl; ++e) total[e] = 0.0f;
  for (int32_t z = 0; z < num_splits; ++z) {
    const float wz = __shfl_sync(kFullMask, w, z);
    if (wz == 0.0f) continue;  // an empty split (warp-uniform)
    const float* a = part_acc + (z * split_stride + pair) * d;
#pragma unroll
    for (int e = 0; e < kEpl; ++e) {
      const int32_t c = lane + 32 * e;
      if (c < d) total[e] += wz * a[c];
    }
  }
  const int64_t o = t * p.out_ld + static_cast<int64_t>(h) * d;
  const float inv = l_tot > 0.0f ? 1.0f / l_tot : 0.0f;
#pragma unroll
  for (int e = 0; e < kEpl; ++e) {
    const int32_t c = lane + 32 * e;
    if (c < d) internal::StoreAs(p.out, p.out_type, o + c, total[e] * inv);
  }
}

// Returns the floats of dynamic shared memory a launch needs after the probability
// rows: enough for the layout (LayoutFor under `budget`) of every block the batch can
// have, and at least a full tile with one K slice (Launch's static_assert keeps that
// within the budget), so that a wrong max_query_len hint costs speed only: blocks with
// fewer pairs than expected then pick fewer warp parts.
int32_t SmemFloatsFor(const PagedAttentionParams& p, const TileShape& shape, int32_t budget) {
  const int32_t d = p.head_dim;
  const bool vec4 = (d & 3) == 0;  // the wider stride bounds the scalar one
  const int32_t stride = ChunkRowStride(d, vec4);
  const int32_t max_pairs = shape.heads_per_block * shape.rows_per_tile;
  int64_t floats = ChunkFloats(max_pairs, d, stride, 1, false);
  // The pair counts blocks can have: rows 1 .. the tile's (the hint's at most) times
  // a full head slice or the group's last, narrower one.
  const int32_t group = p.num_heads / p.num_kv_heads;
  const int32_t last_heads = group - (shape.blocks_per_group - 1) * shape.heads_per_block;
  const int32_t max_rows =
      p.max_query_len > 0 ? std::min(shape.rows_per_tile, p.max_query_len) : shape.rows_per_tile;
  for (int32_t rows = 1; rows <= max_rows; ++rows) {
    for (int32_t heads : {shape.heads_per_block, last_heads}) {
      const ChunkLayout c = LayoutFor(rows * heads, d, vec4, budget);
      floats = std::max(floats, ChunkFloats(rows * heads, d, stride, c.split, c.together));
    }
  }
  return static_cast<int32_t>(std::min<int64_t>(floats, budget));
}

template <int kEpl, int kPpw>
cudaError_t Launch(const PagedAttentionParams& p, const int32_t* tile_start, dim3 grid,
                   const TileShape& shape, const SplitState& split_kv, cudaStream_t stream) {
  constexpr int kProbFloats = kWarps * kPpw * kKeysPerChunk;
  static_assert(ChunkFloats(kWarps * kPpw, 32 * kEpl, ChunkRowStride(32 * kEpl, true), 1, false) +
                        kProbFloats <=
                    kSmemFloats,
                "a full tile, one K slice and the probability rows must fit the shared memory");
  const int32_t smem_floats = SmemFloatsFor(p, shape, kSmemFloats - kProbFloats);
  const size_t smem_bytes = sizeof(float) * static_cast<size_t>(kProbFloats + smem_floats);
  PagedAttentionKernel<kEpl, kPpw><<<grid, kThreads, smem_bytes, stream>>>(
      p, tile_start, shape.heads_per_block, shape.rows_per_tile, smem_floats, split_kv);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess || grid.z == 1) return err;
  const int64_t pairs = p.num_tokens * p.num_heads;
  const auto merge_blocks = static_cast<unsigned>((pairs + kMergeWarps - 1) / kMergeWarps);
  MergeSplitsKernel<kEpl><<<merge_blocks, 32 * kMergeWarps, 0, stream>>>(
      p, static_cast<int32_t>(grid.z), split_kv.ml, split_kv.acc);
  return cudaGetLastError();
}

// Launches the variant for the head dim's columns per lane and the tile's pairs per
// warp (1, or PairsPerWarp(32 * kEpl)).
template <int kEpl>
cudaError_t LaunchFor(const PagedAttentionParams& p, const int32_t* tile_start, dim3 grid,
                      const TileShape& shape, const SplitState& split_kv, cudaStream_t stream) {
  constexpr int kPpw = PairsPerWarp(32 * kEpl);
  if (kPpw == 1 || shape.pairs_per_warp == 1) {
    return Launch<kEpl, 1>(p, tile_start, grid, shape, split_kv, stream);
  }
  return Launch<kEpl, kPpw>(p, tile_start, grid, shape, split_kv, stream);
}

}  // namespace

PagedAttentionSplit ChoosePagedAttentionSplit(const PagedAttentionParams& p) {
  if (p.num_sms <= 0 || p.max_kv_len < 2 * kMinKeysPerSplit || p.num_seqs <= 0 ||
      p.num_tokens <= 0 || p.num_kv_heads <= 0 || p.num_heads <= 0 ||
      p.num_heads % p.num_kv_heads != 0) {
    return {};
  }
  const TileShape shape = TileShapeFor(p);
  int64_t tiles = MaxTiles(p.num_tokens, p.num_seqs, shape.rows_per_tile);
  if (p.max_query_len > 0) {
    const int64_t per_seq = (p.max_query_len + shape.rows_per_tile - 1) / shape.rows_per_tile;
    tiles = std::min(tiles, per_seq * p.num_seqs);
  }
  const int64_t blocks = tiles * p.num_kv_heads * shape.blocks_per_group;
  const int64_t target = int64_t{kSplitTargetPerSm} * p.num_sms;
  if (blocks >= target) return {};
  int64_t splits = (target + blocks - 1) / blocks;
  splits = std::min<int64_t>(splits, p.max_kv_len / kMinKeysPerSplit);
  splits = std::min<int64_t>(splits, kMaxSplits);
  splits = std::min<int64_t>(splits,
                             int64_t{kSplitPairsPerSm} * p.num_sms / (p.num_tokens * p.num_heads));
  return SplitKeys(p.max_kv_len, splits);
}

size_t PagedAttentionWorkspaceBytes(int32_t num_seqs, int64_t num_tokens, int32_t num_heads,
                                    int32_t head_dim, int32_t max_splits) {
  size_t bytes = AlignUp(sizeof(int32_t) * (static_cast<size_t>(num_seqs < 0 ? 0 : num_seqs) + 1));
  if (max_splits > 1 && num_tokens > 0 && num_heads > 0 && head_dim > 0) {
    bytes += sizeof(float) * static_cast<size_t>(max_splits) * static_cast<size_t>(num_tokens) *
             static_cast<size_t>(num_heads) * (static_cast<size_t>(head_dim) + 2);
  }
  return bytes;
}

size_t PagedAttentionFixedWorkspaceBytes(int32_t num_seqs, int32_t head_dim, int32_t num_sms) {
  size_t bytes = PagedAttentionWorkspaceBytes(num_seqs, 0, 0, 0, 1);
  if (num_sms > 0 && head_dim > 0) {
    bytes += sizeof(float) * static_cast<size_t>(kSplitPairsPerSm) * static_cast<size_t>(num_sms) *
             (static_cast<size_t>(head_dim) + 2);
  }
  return bytes;
}

cudaError_t LaunchPagedAttention(const PagedAttentionParams& p, void* workspace,
                                 size_t workspace_bytes, cudaStream_t stream) {
  if (p.num_seqs == 0 || p.num_tokens == 0) return cudaSuccess;
  if (p.num_seqs < 0 || p.num_tokens < 0 || p.head_dim <= 0 || p.head_dim > kMaxHeadDim ||
      p.num_kv_heads <= 0 || p.num_heads <= 0 || p.num_heads % p.num_kv_heads != 0 ||
      p.block_size <= 0) {
    return cudaErrorInvalidValue;
  }
  const size_t tile_bytes =
      PagedAttentionWorkspaceBytes(p.num_seqs, p.num_tokens, p.num_heads, p.head_dim, 1);
  if (workspace == nullptr || workspace_bytes < tile_bytes) return cudaErrorInvalidValue;
  const TileShape shape = TileShapeFor(p);
  const int64_t max_tiles = MaxTiles(p.num_tokens, p.num_seqs, shape.rows_per_tile);
  if (max_tiles > INT32_MAX || int64_t{p.num_kv_heads} * shape.blocks_per_group > 65535) {
    return cudaErrorInvalidValue;
  }

  // Split-KV, with no more splits than the workspace holds partials for.
  PagedAttentionSplit split = ChoosePagedAttentionSplit(p);
  const size_t split_bytes = sizeof(float) * static_cast<size_t>(p.num_tokens) *
                             static_cast<size_t>(p.num_heads) *
                             (static_cast<size_t>(p.head_dim) + 2);
  const auto fits = static_cast<int64_t>((workspace_bytes - tile_bytes) / split_bytes);
  if (split.num_splits > fits) split = SplitKeys(p.max_kv_len, fits);
  auto* tile_start = static_cast<int32_t*>(workspace);
  SplitState split_kv;
  if (split.num_splits > 1) {
    split_kv.keys_per_split = split.keys_per_split;
    split_kv.ml = reinterpret_cast<float*>(static_cast<char*>(workspace) + tile_bytes);
    split_kv.acc =
        split_kv.ml + 2 * static_cast<int64_t>(split.num_splits) * p.num_tokens * p.num_heads;
  }

  TileStartKernel<<<1, kScanThreads, 0, stream>>>(p.query_start, p.num_seqs, shape.rows_per_tile,
                                                  tile_start);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;

  const dim3 grid(static_cast<unsigned>(max_tiles),
                  static_cast<unsigned>(p.num_kv_heads * shape.blocks_per_group),
                  static_cast<unsigned>(split.num_splits));
  if (p.head_dim <= 32) return LaunchFor<1>(p, tile_start, grid, shape, split_kv, stream);
  if (p.head_dim <= 64) return LaunchFor<2>(p, tile_start, grid, shape, split_kv, stream);
  if (p.head_dim <= 128) return LaunchFor<4>(p, tile_start, grid, shape, split_kv, stream);
  return LaunchFor<8>(p, tile_start, grid, shape, split_kv, stream);
}

}  // namespace orca::kernels
