// The inner loops of the CPU backend's paged KV cache: attention for one (sequence,
// head) pair, a decode step's attention for a sequence's heads read block by block, and
// the conversion of new K/V rows into the cache's element type.
// Cached keys and values may be float32, float16 or bfloat16 (KvCacheShape::dtype);
// queries, scores, accumulators and outputs are float32.
//
// The path is chosen at run time (SimdLevel): AVX-512 or AVX2+FMA (+F16C) when the CPU
// has them — four keys' dot products at a time, a vectorized exp, the weighted sum of
// values with up to 128 (AVX-512; AVX2: 64) accumulator columns in registers, 16-bit
// rows widened in registers, AVX-512 reading a head's partial last chunk through a
// mask — and a portable loop otherwise. (The scalar dot product cannot be vectorized by the
// compiler, which would have to reorder a float sum; left scalar it made attention the largest cost
// of a long prefill.) Prefill chunks of kGemmAttentionMinRows query rows or more run as
// two packed GEMMs instead (below), on AVX-512's tiles or AVX2's: 1.9-2.1x the
// row-at-a-time kernel at 64-512 rows over 512 keys on AVX-512 (docs/benchmarks.md
// section 15), 1.7-1.9x on AVX2 (a Zen 3, section 29); on AMX tiles in bfloat16 where
// AttentionProducts allows it.
#pragma once

#include <cstdint>

#include "engine/backend/cpu/half.h"
#include "engine/backend/cpu/simd.h"

namespace orca {

// From this many query rows (a prefill chunk), while the chunk's scores fit in
// kGemmAttentionMaxScores floats (16 MiB), AttendOneHead runs as two GEMMs on
// packed_gemm.h's kernels where the CPU has AVX2 or AVX-512: the scores of every row,
// the causal softmax, the weighted values.
inline constexpr int kGemmAttentionMinRows = 16;
inline constexpr int64_t kGemmAttentionMaxScores = int64_t{4} << 20;

// What AttendOneHead may round: kFloat32 multiplies float32 queries by the cached keys
// and values widened exactly; kBf16Allowed (models whose GEMMs run bfloat16 products,
// AttentionBatch::bf16_products) lets a prefill chunk that takes the GEMM path run on AMX
// tiles where the process has them (CpuHasAmxBf16): queries, keys, values and the
// softmax's probabilities rounded to bfloat16 (nearest even), scores, softmax and sums in
// float32; each output then within about 2^-8 of the sum of its probabilities times
// |v| plus the scores' rounding error (the tests' bound).
enum class AttentionProducts { kFloat32, kBf16Allowed };

// For query row i in [0, q_len), at position p = kv_len - q_len + i, writes
//   out[i] = softmax_j(scale * q[i] . k[j]) weighted sum of v[j], j in [0, p]
// (causal). q rows have stride ldq and out rows ldo; krow[j] and vrow[j] point to the
// head_dim elements of cached key and value j. scores: scratch of at least kv_len
// floats (the GEMM path keeps its own, per thread). T is float, Fp16 or Bf16. `level` above the
// CPU's (CpuMaxSimdLevel) is lowered to it.
template <typename T>
void AttendOneHead(int head_dim, int q_len, int kv_len, const float* q, int64_t ldq,
                   const T* const* krow, const T* const* vrow, float scale, float* scores,
                   float* out, int64_t ldo, SimdLevel level = CpuSimdLevel(),
                   AttentionProducts products = AttentionProducts::kFloat32);

// One decode step's attention for the heads of one sequence (one query row each), read
// in the cache's block order: the paged cache holds a block's rows of every kv head one
// after another, so where AttendOneHead reads one head's rows of each block (2 KiB for a
// 64-wide float16 head, then a jump to the next block), this reads each block's keys for
// all the heads, then their values, as one stream, and prefetches that stream 12 KiB
// ahead: a decode of 16 sequences read its 302 MB cache at the read probe's rate instead
// of 60 % of it (docs/benchmarks.md section 18).
//   out[h] = softmax_j(scale * q[h] . k_{h / group}[j]) weighted sum of v_{h / group}[j]
// for j in [0, kv_len), where key j of kv head g is kblock[j / block_size] +
// g * head_stride + (j % block_size) * head_dim (values alike in vblock). q and out hold
// num_heads rows of head_dim floats one after another. On AVX-512 and AVX2, with
// block_size a multiple of 4 and at most 64, the same products in the same order as
// AttendOneHead at that level (the results are equal); otherwise it runs AttendOneHead
// head by head.
template <typename T>
struct DecodeHeads {
  int head_dim = 0, num_heads = 0, group = 1;  // query heads per kv head
  int kv_len = 0, block_size = 16;
  const T* const* kblock = nullptr;  // per block: kv head 0's first key
  const T* const* vblock = nullptr;
  int64_t head_stride = 0;  // elements from one kv head's rows of a block to the next's
  const float* q = nullptr;
  float scale = 1.0f;
  float* out = nullptr;
};
// scores: scratch of at least num_heads * kv_len floats.
template <typename T>
void AttendDecodeHeads(const DecodeHeads<T>& args, float* scores, SimdLevel level = CpuSimdLevel());

// Writes n floats to dst as T: round to nearest even, NaN kept, float16 saturating at
// +-65504 (a key that large would otherwise become inf and every score NaN).
template <typename T>
void StoreKvRow(const float* src, int n, T* dst);

namespace internal {
// The portable path, whatever the CPU has (for tests of the dispatched one).
template <typename T>
void StoreKvRowPortable(const float* src, int n, T* dst);
}  // namespace internal

}  // namespace orca
