// The inner loops of the CPU backend's paged KV cache: attention for one (sequence,
// head) pair, and the conversion of new K/V rows into the cache's element type.
// Cached keys and values may be float32, float16 or bfloat16 (KvCacheShape::dtype);
// queries, scores, accumulators and outputs are float32.
//
// The path is chosen at run time (SimdLevel): AVX-512 or AVX2+FMA (+F16C) when the CPU
// has them — four keys' dot products at a time, a vectorized exp, the weighted sum of
// values with up to 128 (AVX-512; AVX2: 64) accumulator columns in registers, 16-bit
// rows widened in registers, AVX-512 reading a head's partial last chunk through a
// mask — and a portable loop otherwise. (The scalar dot product cannot be vectorized by the
// compiler, which would have to reorder a float sum; left scalar it made attention the largest cost
// of a long prefill.) Prefill chunks of kGemmAttentionMinRows query rows or more run on
// AVX-512 as two packed GEMMs instead (below): 1.9-2.1x the row-at-a-time kernel at
// 64-512 rows over 512 keys (docs/benchmarks.md section 15).
#pragma once

#include <cstdint>

#include "engine/backend/cpu/half.h"
#include "engine/backend/cpu/simd.h"

namespace orca {

// From this many query rows (a prefill chunk), while the chunk's scores fit in
// kGemmAttentionMaxScores floats (16 MiB), AttendOneHead runs as two GEMMs on
// packed_gemm.h's kernels where the CPU has AVX-512: the scores of every row,
// the causal softmax, the weighted values.
inline constexpr int kGemmAttentionMinRows = 16;
inline constexpr int64_t kGemmAttentionMaxScores = int64_t{4} << 20;

// For query row i in [0, q_len), at position p = kv_len - q_len + i, writes
//   out[i] = softmax_j(scale * q[i] . k[j]) weighted sum of v[j], j in [0, p]
// (causal). q rows have stride ldq and out rows ldo; krow[j] and vrow[j] point to the
// head_dim elements of cached key and value j. scores: scratch of at least kv_len
// floats (the GEMM path keeps its own, per thread). T is float, Fp16 or Bf16. `level` above the
// CPU's (CpuMaxSimdLevel) is lowered to it.
template <typename T>
void AttendOneHead(int head_dim, int q_len, int kv_len, const float* q, int64_t ldq,
                   const T* const* krow, const T* const* vrow, float scale, float* scores,
                   float* out, int64_t ldo, SimdLevel level = CpuSimdLevel());

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
