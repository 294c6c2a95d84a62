#include <cmath>

#include "kernels/internal/device_utils.cuh"
#include "kernels/paged_attention.cuh"

namespace orca::kernels {
namespace {

using internal::kFullMask;

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kPairsPerBlock = 16;
constexpr int kPairsPerWarp = kPairsPerBlock / kWarps;
constexpr int kKeysPerChunk = 32;
constexpr int kScanThreads = 1024;
constexpr int kMaxHeadDim = 256;

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

// kEpl: output columns per lane (head_dim <= 32 * kEpl).
template <int kEpl>
__global__ void __launch_bounds__(kThreads)
    PagedAttentionKernel(PagedAttentionParams p, const int32_t* __restrict__ tile_start,
                         int32_t heads_per_block, int32_t rows_per_tile) {
  extern __shared__ float4 smem4[];  // float4: 16-byte alignment for the vector loads
  float* smem = reinterpret_cast<float*>(smem4);
  const int32_t d = p.head_dim;
  float* q_s = smem;                           // [kPairsPerBlock][d], pre-scaled queries
  float* merge_s = smem + kPairsPerBlock * d;  // [kWarps][d + 2]: acc, max, sum

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
  const int32_t num_pairs = rows * heads;  // (row, head) pairs, 1 .. kPairsPerBlock

  for (int32_t idx = threadIdx.x; idx < num_pairs * d; idx += kThreads) {
    const int32_t pair = idx / d, c = idx - pair * d;
    const int32_t r = pair / heads, h = head0 + pair % heads;
    q_s[idx] =
        p.q[static_cast<int64_t>(q_begin + row0 + r) * p.q_ld + static_cast<int64_t>(h) * d + c] *
        p.scale;
  }
  __syncthreads();

  // Pairs of this warp; with fewer pairs than warps, `split` warps share a pair and
  // take every split-th key chunk.
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int split = num_pairs >= kWarps ? 1 : kWarps / num_pairs;
  const int groups = kWarps / split;
  const int my_group = warp / split, part = warp % split;
  int32_t pair_of[kPairsPerWarp];   // -1: none
  int32_t last_key[kPairsPerWarp];  // causal limit: the pair's own position
  int32_t key_end = 0;
#pragma unroll
  for (int i = 0; i < kPairsPerWarp; ++i) {
    const int32_t pair = my_group + i * groups;
    const bool has = pair < num_pairs;
    pair_of[i] = has ? pair : -1;
    last_key[i] = has ? kv_len - q_len + row0 + pair / heads : -1;
    if (has) key_end = max(key_end, last_key[i] + 1);
  }
  key_end = min(key_end, kv_len);

  const int32_t* table = p.block_tables + static_cast<int64_t>(seq) * p.max_blocks_per_seq;
  const int64_t kv_width = static_cast<int64_t>(p.num_kv_heads) * d;
  const int64_t head_col = static_cast<int64_t>(kv_head) * d;
  const bool vec4 = (d & 3) == 0;

  float m[kPairsPerWarp], l[kPairsPerWarp], acc[kPairsPerWarp][kEpl];
#pragma unroll
  for (int i = 0; i < kPairsPerWarp; ++i) {
    m[i] = -INFINITY;
    l[i] = 0.0f;
#pragma unroll
    for (int e = 0; e < kEpl; ++e) acc[i][e] = 0.0f;
  }

  for (int32_t base = part * kKeysPerChunk; base < key_end; base += split * kKeysPerChunk) {
    // Q.K: lane = key.
    const int32_t j = base + lane;
    const bool in_range = j < key_end;
    long long slot = 0;
    if (in_range) {
      slot = static_cast<long long>(table[j / p.block_size]) * p.block_size + j % p.block_size;
    }
    float score[kPairsPerWarp];
#pragma unroll
    for (int i = 0; i < kPairsPerWarp; ++i) score[i] = 0.0f;
    if (in_range) {
      const float* krow = p.k_cache + slot * kv_width + head_col;
      if (vec4) {
        for (int32_t c = 0; c < d; c += 4) {
          const float4 k4 = *reinterpret_cast<const float4*>(krow + c);
#pragma unroll
          for (int i = 0; i < kPairsPerWarp; ++i) {
            if (pair_of[i] < 0) continue;
            const float4 q4 = *reinterpret_cast<const float4*>(q_s + pair_of[i] * d + c);
            score[i] += q4.x * k4.x + q4.y * k4.y + q4.z * k4.z + q4.w * k4.w;
          }
        }
      } else {
        for (int32_t c = 0; c < d; ++c) {
          const float kc = krow[c];
#pragma unroll
          for (int i = 0; i < kPairsPerWarp; ++i) {
            if (pair_of[i] >= 0) score[i] += q_s[pair_of[i] * d + c] * kc;
          }
        }
      }
    }

    // Online softmax update per pair (all branches are warp-uniform).
    float prob[kPairsPerWarp];
#pragma unroll
    for (int i = 0; i < kPairsPerWarp; ++i) {
      prob[i] = 0.0f;
      if (pair_of[i] < 0) continue;
      const bool allowed = in_range && j <= last_key[i];
      const float s = allowed ? score[i] : -INFINITY;
      const float chunk_max = internal::WarpMax(s);
      if (chunk_max == -INFINITY) continue;  // no key of this chunk is visible to the pair
      const float m_new = fmaxf(m[i], chunk_max);
      const float alpha = expf(m[i] - m_new);
      prob[i] = allowed ? expf(s - m_new) : 0.0f;
      l[i] = l[i] * alpha + internal::WarpSum(prob[i]);
      m[i] = m_new;
#pragma unroll
      for (int e = 0; e < kEpl; ++e) acc[i][e] *= alpha;
    }

    // P.V: lane = output column; each V row is read once for all pairs of the warp.
    const int32_t keys = min(kKeysPerChunk, key_end - base);
    for (int32_t jj = 0; jj < keys; ++jj) {
      const long long vslot = __shfl_sync(kFullMask, slot, jj);
      const float* vrow = p.v_cache + vslot * kv_width + head_col;
      float v[kEpl];
#pragma unroll
      for (int e = 0; e < kEpl; ++e) {
        const int32_t c = lane + 32 * e;
        v[e] = c < d ? vrow[c] : 0.0f;
      }
#pragma unroll
      for (int i = 0; i < kPairsPerWarp; ++i) {
        if (pair_of[i] < 0) continue;
        const float w = __shfl_sync(kFullMask, prob[i], jj);
#pragma unroll
        for (int e = 0; e < kEpl; ++e) acc[i][e] += w * v[e];
      }
    }
  }

  auto out_row = [&](int32_t pair) {
    const int32_t r = pair / heads, h = head0 + pair % heads;
    return p.out + static_cast<int64_t>(q_begin + row0 + r) * p.out_ld +
           static_cast<int64_t>(h) * d;
  };

  if (split > 1) {
    // Here every warp owns at most pair_of[0]; merge the split partial states.
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
      float* o = out_row(pair_of[0]);
      const float inv = l_tot > 0.0f ? 1.0f / l_tot : 0.0f;
#pragma unroll
      for (int e = 0; e < kEpl; ++e) {
        const int32_t c = lane + 32 * e;
        if (c < d) o[c] = total[e] * inv;
      }
    }
    return;
  }

#pragma unroll
  for (int i = 0; i < kPairsPerWarp; ++i) {
    if (pair_of[i] < 0) continue;
    float* o = out_row(pair_of[i]);
    const float inv = l[i] > 0.0f ? 1.0f / l[i] : 0.0f;
#pragma unroll
    for (int e = 0; e < kEpl; ++e) {
      const int32_t c = lane + 32 * e;
      if (c < d) o[c] = acc[i][e] * inv;
    }
  }
}

template <int kEpl>
cudaError_t Launch(const PagedAttentionParams& p, const int32_t* tile_start, dim3 grid, size_t smem,
                   int32_t heads_per_block, int32_t rows_per_tile, cudaStream_t stream) {
  PagedAttentionKernel<kEpl>
      <<<grid, kThreads, smem, stream>>>(p, tile_start, heads_per_block, rows_per_tile);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchPagedAttention(const PagedAttentionParams& p, int32_t* workspace,
                                 cudaStream_t stream) {
  if (p.num_seqs == 0 || p.num_tokens == 0) return cudaSuccess;
  if (p.num_seqs < 0 || p.num_tokens < 0 || p.head_dim <= 0 || p.head_dim > kMaxHeadDim ||
      p.num_kv_heads <= 0 || p.num_heads <= 0 || p.num_heads % p.num_kv_heads != 0 ||
      p.block_size <= 0) {
    return cudaErrorInvalidValue;
  }
  const int32_t group = p.num_heads / p.num_kv_heads;
  const int32_t heads_per_block = group < kPairsPerBlock ? group : kPairsPerBlock;
  const int32_t rows_per_tile = kPairsPerBlock / heads_per_block;
  const int32_t blocks_per_group = (group + heads_per_block - 1) / heads_per_block;
  const int64_t max_tiles = (p.num_tokens + rows_per_tile - 1) / rows_per_tile + p.num_seqs;
  if (max_tiles > INT32_MAX || int64_t{p.num_kv_heads} * blocks_per_group > 65535) {
    return cudaErrorInvalidValue;
  }

  TileStartKernel<<<1, kScanThreads, 0, stream>>>(p.query_start, p.num_seqs, rows_per_tile,
                                                  workspace);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;

  const dim3 grid(static_cast<unsigned>(max_tiles),
                  static_cast<unsigned>(p.num_kv_heads * blocks_per_group));
  const size_t smem =
      sizeof(float) * static_cast<size_t>(kPairsPerBlock * p.head_dim + kWarps * (p.head_dim + 2));
  if (p.head_dim <= 32)
    return Launch<1>(p, workspace, grid, smem, heads_per_block, rows_per_tile, stream);
  if (p.head_dim <= 64)
    return Launch<2>(p, workspace, grid, smem, heads_per_block, rows_per_tile, stream);
  if (p.head_dim <= 128)
    return Launch<4>(p, workspace, grid, smem, heads_per_block, rows_per_tile, stream);
  return Launch<8>(p, workspace, grid, smem, heads_per_block, rows_per_tile, stream);
}

}  // namespace orca::kernels
