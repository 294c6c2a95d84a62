// GCC 12 reports the AVX-512 intrinsics' own _mm512_undefined_* inputs as "may be used
// uninitialized" once they are inlined (false positives; GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "engine/backend/cpu/attention_kernel.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <type_traits>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "engine/backend/cpu/packed_gemm.h"
#include "engine/backend/cpu/packed_gemm_amx.h"
#include "engine/backend/cpu/simd.h"
#include "engine/backend/cpu/vec_exp.h"
#include "engine/common/dtype.h"

namespace orca {
namespace {

constexpr float kF16Max = 65504.0f;

inline void FromF32(float x, float* dst) { *dst = x; }
inline void FromF32(float x, Fp16* dst) {
  // std::clamp keeps NaN (both comparisons are false).
  dst->bits = F32ToF16(std::clamp(x, -kF16Max, kF16Max));
}
inline void FromF32(float x, Bf16* dst) { dst->bits = F32ToBf16(x); }

template <typename T>
void AttendScalar(int d, int q_len, int kv_len, const float* q, int64_t ldq, const T* const* krow,
                  const T* const* vrow, float scale, float* scores, float* out, int64_t ldo) {
  for (int i = 0; i < q_len; ++i) {
    const int pos = kv_len - q_len + i;
    const float* qv = q + i * ldq;
    float max_score = -INFINITY;
    for (int j = 0; j <= pos; ++j) {
      float dot = 0;
      for (int c = 0; c < d; ++c) dot += qv[c] * ToF32(krow[j][c]);
      scores[j] = dot * scale;
      max_score = std::max(max_score, scores[j]);
    }
    float sum = 0;
    for (int j = 0; j <= pos; ++j) {
      scores[j] = std::exp(scores[j] - max_score);
      sum += scores[j];
    }
    float* o = out + i * ldo;
    std::fill(o, o + d, 0.0f);
    for (int j = 0; j <= pos; ++j) {
      for (int c = 0; c < d; ++c) o[c] += scores[j] * ToF32(vrow[j][c]);
    }
    const float inv = 1.0f / sum;
    for (int c = 0; c < d; ++c) o[c] *= inv;
  }
}

// Keys and values are read this many rows ahead of their use: a cache streams one head's
// rows of a block (16 x head_dim elements) and then jumps to the next block, which the
// hardware prefetchers do not follow.
constexpr int kPrefetchKeys = 32;

// Into L2 (T1), not L1: a prefetch into L1 holds one of the core's few L1 miss buffers
// until its line arrives, and with them a decode's attention read its scattered blocks
// at 38 % of the machine's streaming bandwidth; L2's miss queue is longer (AMD EPYC,
// Zen 4: a 16-sequence decode's attention 1.25-1.37x faster; 16 to 128 keys ahead made
// no difference either way; docs/benchmarks.md section 18).
template <typename T>
inline void PrefetchRow(const T* row, int n) {
  const char* p = reinterpret_cast<const char*>(row);
  for (int b = 0; b < n * static_cast<int>(sizeof(T)); b += 64) {
    _mm_prefetch(p + b, _MM_HINT_T1);
  }
}

// AttendDecodeHeads reads a block's rows of each kv head in turn, then the next block's:
// it prefetches the rows this many bytes ahead in that order (into L2, as PrefetchRow).
// A steady stream 12 KiB ahead read a 302 MB cache at the read probe's rate; a whole
// block's rows prefetched at once (24 KiB) were mostly lost, and without software
// prefetches the blocks read no faster than one head at a time (AMD EPYC, Zen 4;
// docs/benchmarks.md section 18).
constexpr int kStreamAheadBytes = 12 << 10;

// Prefetches the rows `ahead` heads past (block b, kv head g) in the order the pass reads
// them (a block's heads, then the next block's).
template <typename T>
inline void PrefetchAheadInPass(const T* const* block, int blocks, int b, int g, int kv_heads,
                                int ahead, int64_t head_stride, int rows_elems) {
  int gg = g + ahead, bb = b;
  while (gg >= kv_heads) {
    gg -= kv_heads;
    ++bb;
  }
  if (bb < blocks) PrefetchRow(block[bb] + gg * head_stride, rows_elems);
}

// scores[j] = scale * q . k[j] for j in [0, n); returns their maximum. Four keys at a
// time: four independent FMA chains, and one horizontal reduction for the four.
template <typename T>
__attribute__((target("avx2,fma,f16c"))) float ScoresAvx2(int d, int n, const float* qv,
                                                          const T* const* krow, float scale,
                                                          float* scores) {
  const int d8 = d & ~7;
  const __m128 vscale = _mm_set1_ps(scale);
  __m128 vmax = _mm_set1_ps(-INFINITY);
  int j = 0;
  for (; j + 4 <= n; j += 4) {
    const T *k0 = krow[j], *k1 = krow[j + 1], *k2 = krow[j + 2], *k3 = krow[j + 3];
    if (j + kPrefetchKeys + 4 <= n) {
      for (int u = 0; u < 4; ++u) PrefetchRow(krow[j + kPrefetchKeys + u], d);
    }
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int c = 0; c < d8; c += 8) {
      const __m256 qc = _mm256_loadu_ps(qv + c);
      a0 = _mm256_fmadd_ps(qc, Load8(k0 + c), a0);
      a1 = _mm256_fmadd_ps(qc, Load8(k1 + c), a1);
      a2 = _mm256_fmadd_ps(qc, Load8(k2 + c), a2);
      a3 = _mm256_fmadd_ps(qc, Load8(k3 + c), a3);
    }
    // [a0 a1 a2 a3] pairwise sums, then the two 128-bit halves: the four dot products.
    const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    __m128 dots = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    if (d8 < d) {
      alignas(16) float tail[4] = {0, 0, 0, 0};
      for (int c = d8; c < d; ++c) {
        tail[0] += qv[c] * ToF32(k0[c]);
        tail[1] += qv[c] * ToF32(k1[c]);
        tail[2] += qv[c] * ToF32(k2[c]);
        tail[3] += qv[c] * ToF32(k3[c]);
      }
      dots = _mm_add_ps(dots, _mm_load_ps(tail));
    }
    dots = _mm_mul_ps(dots, vscale);
    _mm_storeu_ps(scores + j, dots);
    vmax = _mm_max_ps(vmax, dots);
  }
  vmax = _mm_max_ps(vmax, _mm_movehl_ps(vmax, vmax));
  vmax = _mm_max_ss(vmax, _mm_shuffle_ps(vmax, vmax, 1));
  float max_score = _mm_cvtss_f32(vmax);
  for (; j < n; ++j) {
    const T* kv = krow[j];
    __m256 a = _mm256_setzero_ps();
    for (int c = 0; c < d8; c += 8) a = _mm256_fmadd_ps(_mm256_loadu_ps(qv + c), Load8(kv + c), a);
    float dot = Sum8(a);
    for (int c = d8; c < d; ++c) dot += qv[c] * ToF32(kv[c]);
    scores[j] = dot * scale;
    max_score = std::max(max_score, scores[j]);
  }
  return max_score;
}

// row[j] = exp(row[j] - max) for j in [0, n) (the softmax's numerators); returns their sum.
__attribute__((target("avx2,fma,f16c"))) float ExpSumAvx2(float* row, int n, float max) {
  const __m256 vmax = _mm256_set1_ps(max);
  __m256 vsum = _mm256_setzero_ps();
  int j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 e = Exp8(_mm256_sub_ps(_mm256_loadu_ps(row + j), vmax));
    _mm256_storeu_ps(row + j, e);
    vsum = _mm256_add_ps(vsum, e);
  }
  float sum = Sum8(vsum);
  for (; j < n; ++j) {
    row[j] = std::exp(row[j] - max);
    sum += row[j];
  }
  return sum;
}

template <typename T>
__attribute__((target("avx2,fma,f16c"))) void AttendAvx2(int d, int q_len, int kv_len,
                                                         const float* q, int64_t ldq,
                                                         const T* const* krow, const T* const* vrow,
                                                         float scale, float* scores, float* out,
                                                         int64_t ldo) {
  const int d8 = d & ~7;
  for (int i = 0; i < q_len; ++i) {
    const int n = kv_len - q_len + i + 1;  // keys [0, n)
    const float max_score = ScoresAvx2(d, n, q + i * ldq, krow, scale, scores);
    const float sum = ExpSumAvx2(scores, n, max_score);
    const __m256 vinv = _mm256_set1_ps(1.0f / sum);
    // out = sum_j p_j v_j, 64 columns at a time with the accumulators in registers.
    float* o = out + i * ldo;
    int c = 0;
    for (; c + 64 <= d8; c += 64) {
      __m256 acc[8];
      for (__m256& a : acc) a = _mm256_setzero_ps();
      for (int jj = 0; jj < n; ++jj) {
        if (jj + kPrefetchKeys < n) PrefetchRow(vrow[jj + kPrefetchKeys] + c, std::min(d - c, 64));
        const __m256 p = _mm256_broadcast_ss(scores + jj);
        const T* vv = vrow[jj] + c;
        for (int u = 0; u < 8; ++u) acc[u] = _mm256_fmadd_ps(p, Load8(vv + 8 * u), acc[u]);
      }
      for (int u = 0; u < 8; ++u) _mm256_storeu_ps(o + c + 8 * u, _mm256_mul_ps(acc[u], vinv));
    }
    for (; c + 16 <= d8; c += 16) {
      __m256 a0 = _mm256_setzero_ps(), a1 = a0;
      for (int jj = 0; jj < n; ++jj) {
        const __m256 p = _mm256_broadcast_ss(scores + jj);
        a0 = _mm256_fmadd_ps(p, Load8(vrow[jj] + c), a0);
        a1 = _mm256_fmadd_ps(p, Load8(vrow[jj] + c + 8), a1);
      }
      _mm256_storeu_ps(o + c, _mm256_mul_ps(a0, vinv));
      _mm256_storeu_ps(o + c + 8, _mm256_mul_ps(a1, vinv));
    }
    for (; c < d8; c += 8) {
      __m256 a0 = _mm256_setzero_ps();
      for (int jj = 0; jj < n; ++jj) {
        a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(scores + jj), Load8(vrow[jj] + c), a0);
      }
      _mm256_storeu_ps(o + c, _mm256_mul_ps(a0, vinv));
    }
    const float inv = 1.0f / sum;
    for (; c < d; ++c) {
      float acc = 0;
      // (Fused explicitly: AccumulateRowsAvx2 computes the same sums a block at a time.)
      for (int jj = 0; jj < n; ++jj) acc = std::fma(scores[jj], ToF32(vrow[jj][c]), acc);
      o[c] = acc * inv;
    }
  }
}

// acc[0, d) += sum_t p_t v_t over a block's `rows` values (v_t at base + t * d): the
// same fused multiply-adds in the same order as AttendAvx2's over those keys, with the
// accumulators kept in `acc` between blocks (AttendDecodeHeads).
template <typename T>
__attribute__((target("avx2,fma,f16c"))) void AccumulateRowsAvx2(int rows, const float* p,
                                                                 const T* base, int d, float* acc) {
  const int d8 = d & ~7;
  int c = 0;
  for (; c + 32 <= d8; c += 32) {
    __m256 a0 = _mm256_loadu_ps(acc + c), a1 = _mm256_loadu_ps(acc + c + 8),
           a2 = _mm256_loadu_ps(acc + c + 16), a3 = _mm256_loadu_ps(acc + c + 24);
    for (int t = 0; t < rows; ++t) {
      const __m256 pt = _mm256_broadcast_ss(p + t);
      const T* vv = base + int64_t{t} * d + c;
      a0 = _mm256_fmadd_ps(pt, Load8(vv), a0);
      a1 = _mm256_fmadd_ps(pt, Load8(vv + 8), a1);
      a2 = _mm256_fmadd_ps(pt, Load8(vv + 16), a2);
      a3 = _mm256_fmadd_ps(pt, Load8(vv + 24), a3);
    }
    _mm256_storeu_ps(acc + c, a0);
    _mm256_storeu_ps(acc + c + 8, a1);
    _mm256_storeu_ps(acc + c + 16, a2);
    _mm256_storeu_ps(acc + c + 24, a3);
  }
  for (; c < d8; c += 8) {
    __m256 a0 = _mm256_loadu_ps(acc + c);
    for (int t = 0; t < rows; ++t) {
      a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(p + t), Load8(base + int64_t{t} * d + c), a0);
    }
    _mm256_storeu_ps(acc + c, a0);
  }
  for (; c < d; ++c) {
    float x = acc[c];
    for (int t = 0; t < rows; ++t) x = std::fma(p[t], ToF32(base[int64_t{t} * d + c]), x);
    acc[c] = x;
  }
}

__attribute__((target("avx2,fma,f16c"))) void StoreF16Avx2(const float* src, int n, Fp16* dst) {
  const __m256 hi = _mm256_set1_ps(kF16Max), lo = _mm256_set1_ps(-kF16Max);
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    // min/max return their second operand when either is NaN: NaN passes through.
    const __m256 x = _mm256_max_ps(lo, _mm256_min_ps(hi, _mm256_loadu_ps(src + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  for (; i < n; ++i) FromF32(src[i], dst + i);
}

// The sum of a's sixteen lanes folded to eight.
ORCA_AVX512 inline __m256 Fold8(__m512 a) {
  return _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
}

// scores[j] = scale * q . k[j] for j in [0, n); returns their maximum. As ScoresAvx2,
// with sixteen lanes and the head's last partial chunk read through a mask.
template <typename T>
ORCA_AVX512 float ScoresAvx512(int d, int n, const float* qv, const T* const* krow, float scale,
                               float* scores) {
  const int d16 = d & ~15;
  const __mmask16 tail = FirstLanes(d - d16);
  const __m512 qtail = LoadPart16(qv + d16, tail);
  const __m128 vscale = _mm_set1_ps(scale);
  __m128 vmax = _mm_set1_ps(-INFINITY);
  int j = 0;
  for (; j + 4 <= n; j += 4) {
    const T *k0 = krow[j], *k1 = krow[j + 1], *k2 = krow[j + 2], *k3 = krow[j + 3];
    if (j + kPrefetchKeys + 4 <= n) {
      for (int u = 0; u < 4; ++u) PrefetchRow(krow[j + kPrefetchKeys + u], d);
    }
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int c = 0; c < d16; c += 16) {
      const __m512 qc = _mm512_loadu_ps(qv + c);
      a0 = _mm512_fmadd_ps(qc, Load16(k0 + c), a0);
      a1 = _mm512_fmadd_ps(qc, Load16(k1 + c), a1);
      a2 = _mm512_fmadd_ps(qc, Load16(k2 + c), a2);
      a3 = _mm512_fmadd_ps(qc, Load16(k3 + c), a3);
    }
    if (tail != 0) {
      a0 = _mm512_fmadd_ps(qtail, LoadPart16(k0 + d16, tail), a0);
      a1 = _mm512_fmadd_ps(qtail, LoadPart16(k1 + d16, tail), a1);
      a2 = _mm512_fmadd_ps(qtail, LoadPart16(k2 + d16, tail), a2);
      a3 = _mm512_fmadd_ps(qtail, LoadPart16(k3 + d16, tail), a3);
    }
    const __m256 h =
        _mm256_hadd_ps(_mm256_hadd_ps(Fold8(a0), Fold8(a1)), _mm256_hadd_ps(Fold8(a2), Fold8(a3)));
    __m128 dots = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    dots = _mm_mul_ps(dots, vscale);
    _mm_storeu_ps(scores + j, dots);
    vmax = _mm_max_ps(vmax, dots);
  }
  vmax = _mm_max_ps(vmax, _mm_movehl_ps(vmax, vmax));
  vmax = _mm_max_ss(vmax, _mm_shuffle_ps(vmax, vmax, 1));
  float max_score = _mm_cvtss_f32(vmax);
  for (; j < n; ++j) {
    const T* kv = krow[j];
    __m512 a = _mm512_mul_ps(qtail, LoadPart16(kv + d16, tail));
    for (int c = 0; c < d16; c += 16)
      a = _mm512_fmadd_ps(_mm512_loadu_ps(qv + c), Load16(kv + c), a);
    scores[j] = _mm512_reduce_add_ps(a) * scale;
    max_score = std::max(max_score, scores[j]);
  }
  return max_score;
}

// o[c0, c0 + 16 V) = inv * sum_j p_j v_j[c0, ...), the last of the V vectors masked by
// `last`: one pass over the n values with V accumulators in registers.
template <int V, bool kPartial, typename T>
ORCA_AVX512 inline void WeightedSumAvx512(int n, const float* p, const T* const* vrow, int c0,
                                          int width, __mmask16 last, float inv, float* o) {
  __m512 acc[V];
  for (__m512& a : acc) a = _mm512_setzero_ps();
  for (int j = 0; j < n; ++j) {
    if (j + kPrefetchKeys < n) PrefetchRow(vrow[j + kPrefetchKeys] + c0, width);
    const __m512 pj = _mm512_set1_ps(p[j]);
    const T* vv = vrow[j] + c0;
    for (int u = 0; u + 1 < V; ++u) acc[u] = _mm512_fmadd_ps(pj, Load16(vv + 16 * u), acc[u]);
    // (A masked load costs more than a plain one: only a partial vector pays it.)
    const __m512 tail = kPartial ? LoadPart16(vv + 16 * (V - 1), last) : Load16(vv + 16 * (V - 1));
    acc[V - 1] = _mm512_fmadd_ps(pj, tail, acc[V - 1]);
  }
  const __m512 vinv = _mm512_set1_ps(inv);
  for (int u = 0; u + 1 < V; ++u) _mm512_storeu_ps(o + c0 + 16 * u, _mm512_mul_ps(acc[u], vinv));
  _mm512_mask_storeu_ps(o + c0 + 16 * (V - 1), last, _mm512_mul_ps(acc[V - 1], vinv));
}

// WeightedSumAvx512 with its vector count chosen at run time.
template <bool kPartial, typename T>
ORCA_AVX512 void WeightedSumPass(int vecs, int n, const float* p, const T* const* vrow, int c0,
                                 int width, __mmask16 last, float inv, float* o) {
  switch (vecs) {
    case 1:
      return WeightedSumAvx512<1, kPartial>(n, p, vrow, c0, width, last, inv, o);
    case 2:
      return WeightedSumAvx512<2, kPartial>(n, p, vrow, c0, width, last, inv, o);
    case 3:
      return WeightedSumAvx512<3, kPartial>(n, p, vrow, c0, width, last, inv, o);
    case 4:
      return WeightedSumAvx512<4, kPartial>(n, p, vrow, c0, width, last, inv, o);
    case 5:
      return WeightedSumAvx512<5, kPartial>(n, p, vrow, c0, width, last, inv, o);
    case 6:
      return WeightedSumAvx512<6, kPartial>(n, p, vrow, c0, width, last, inv, o);
    case 7:
      return WeightedSumAvx512<7, kPartial>(n, p, vrow, c0, width, last, inv, o);
    default:
      return WeightedSumAvx512<8, kPartial>(n, p, vrow, c0, width, last, inv, o);
  }
}

// As ExpSumAvx2, sixteen at a time.
ORCA_AVX512 float ExpSumAvx512(float* row, int n, float max) {
  const __m512 vmax = _mm512_set1_ps(max);
  __m512 vsum = _mm512_setzero_ps();
  int j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m512 e = Exp16(_mm512_sub_ps(_mm512_loadu_ps(row + j), vmax));
    _mm512_storeu_ps(row + j, e);
    vsum = _mm512_add_ps(vsum, e);
  }
  if (j < n) {  // the last partial sixteen: masked lanes neither read nor summed
    const __mmask16 m = FirstLanes(n - j);
    const __m512 e = Exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, row + j), vmax));
    _mm512_mask_storeu_ps(row + j, m, e);
    vsum = _mm512_mask_add_ps(vsum, m, vsum, e);
  }
  return _mm512_reduce_add_ps(vsum);
}

template <typename T>
ORCA_AVX512 void AttendAvx512(int d, int q_len, int kv_len, const float* q, int64_t ldq,
                              const T* const* krow, const T* const* vrow, float scale,
                              float* scores, float* out, int64_t ldo) {
  for (int i = 0; i < q_len; ++i) {
    const int n = kv_len - q_len + i + 1;  // keys [0, n)
    const float max_score = ScoresAvx512(d, n, q + i * ldq, krow, scale, scores);
    const float inv = 1.0f / ExpSumAvx512(scores, n, max_score);
    // The output in passes of up to 128 columns (8 accumulators), each one pass over
    // the values: a 64-wide head is one pass of four.
    float* o = out + i * ldo;
    for (int c = 0; c < d; c += 128) {
      const int width = std::min(128, d - c);
      const int vecs = (width + 15) / 16;
      const __mmask16 last = FirstLanes(width - 16 * (vecs - 1));
      if (width % 16 == 0) {
        WeightedSumPass<false>(vecs, n, scores, vrow, c, width, last, inv, o);
      } else {
        WeightedSumPass<true>(vecs, n, scores, vrow, c, width, last, inv, o);
      }
    }
  }
}

// acc[c0, c0 + 16 V) += sum_t p_t v_t[c0, ...) over a block's `rows` values, which lie
// one after another (v_t at base + t * d); the last vector masked by `last`. The same
// fused multiply-adds in the same order as WeightedSumAvx512 over those keys, with the
// accumulators kept in `acc` between blocks.
template <int V, bool kPartial, typename T>
ORCA_AVX512 inline void AccumulateBlockAvx512(int rows, const float* p, const T* base, int d,
                                              int c0, __mmask16 last, float* acc) {
  __m512 a[V];
  for (int u = 0; u + 1 < V; ++u) a[u] = _mm512_loadu_ps(acc + c0 + 16 * u);
  a[V - 1] = _mm512_maskz_loadu_ps(last, acc + c0 + 16 * (V - 1));
  for (int t = 0; t < rows; ++t) {
    const __m512 pt = _mm512_set1_ps(p[t]);
    const T* vv = base + int64_t{t} * d + c0;
    for (int u = 0; u + 1 < V; ++u) a[u] = _mm512_fmadd_ps(pt, Load16(vv + 16 * u), a[u]);
    const __m512 tail = kPartial ? LoadPart16(vv + 16 * (V - 1), last) : Load16(vv + 16 * (V - 1));
    a[V - 1] = _mm512_fmadd_ps(pt, tail, a[V - 1]);
  }
  for (int u = 0; u + 1 < V; ++u) _mm512_storeu_ps(acc + c0 + 16 * u, a[u]);
  _mm512_mask_storeu_ps(acc + c0 + 16 * (V - 1), last, a[V - 1]);
}

// AccumulateBlockAvx512 with its vector count (1 to 8) chosen at run time.
template <bool kPartial, typename T>
ORCA_AVX512 void AccumulateBlockPass(int vecs, int rows, const float* p, const T* base, int d,
                                     int c0, __mmask16 last, float* acc) {
  using Pass = void (*)(int, const float*, const T*, int, int, __mmask16, float*);
  static constexpr Pass kByVectors[] = {
      &AccumulateBlockAvx512<1, kPartial, T>, &AccumulateBlockAvx512<2, kPartial, T>,
      &AccumulateBlockAvx512<3, kPartial, T>, &AccumulateBlockAvx512<4, kPartial, T>,
      &AccumulateBlockAvx512<5, kPartial, T>, &AccumulateBlockAvx512<6, kPartial, T>,
      &AccumulateBlockAvx512<7, kPartial, T>, &AccumulateBlockAvx512<8, kPartial, T>};
  kByVectors[std::clamp(vecs, 1, 8) - 1](rows, p, base, d, c0, last, acc);
}

// AccumulateRowsAvx2 on AVX-512, in passes of up to 128 columns as AttendAvx512.
template <typename T>
ORCA_AVX512 void AccumulateRowsAvx512(int rows, const float* p, const T* base, int d, float* acc) {
  for (int c = 0; c < d; c += 128) {
    const int width = std::min(128, d - c);
    const int vecs = (width + 15) / 16;
    const __mmask16 last = FirstLanes(width - 16 * (vecs - 1));
    if (width % 16 == 0) {
      AccumulateBlockPass<false>(vecs, rows, p, base, d, c, last, acc);
    } else {
      AccumulateBlockPass<true>(vecs, rows, p, base, d, c, last, acc);
    }
  }
}

// A path's pieces for AttendDecodeHeadsWith.
template <typename T>
struct DecodeKernels {
  float (*scores)(int d, int n, const float* qv, const T* const* krow, float scale, float* scores);
  float (*exp_sum)(float* row, int n, float max);
  void (*accumulate)(int rows, const float* p, const T* base, int d, float* acc);
};

// AttendDecodeHeads (attention_kernel.h) with one path's kernels: every head's keys block
// by block, each head's softmax, then the values block by block, accumulated in `out`.
template <typename T>
void AttendDecodeHeadsWith(const DecodeHeads<T>& a, float* scores, const DecodeKernels<T>& k) {
  const int d = a.head_dim, blocks = (a.kv_len + a.block_size - 1) / a.block_size;
  const int kv_heads = (a.num_heads + a.group - 1) / a.group;
  const int rows_elems = a.block_size * d;
  const int ahead = std::max(1, kStreamAheadBytes / (rows_elems * static_cast<int>(sizeof(T))));
  // per_head[h]: head h's largest score, then the reciprocal of its softmax's sum (no
  // heap for up to 128 heads: this runs per sequence and run of heads, every layer).
  absl::InlinedVector<float, 128> per_head(static_cast<size_t>(a.num_heads), -INFINITY);
  const T* rows[64];  // one block's rows of one head (block_size <= 64)
  for (int b = 0; b < blocks; ++b) {
    const int j0 = b * a.block_size, n = std::min(a.block_size, a.kv_len - j0);
    for (int h = 0; h < a.num_heads; ++h) {
      const int g = h / a.group;
      if (h % a.group == 0) {
        PrefetchAheadInPass(a.kblock, blocks, b, g, kv_heads, ahead, a.head_stride, rows_elems);
      }
      const T* base = a.kblock[b] + g * a.head_stride;
      for (int t = 0; t < n; ++t) rows[t] = base + int64_t{t} * d;
      float& m = per_head[static_cast<size_t>(h)];
      m = std::max(m, k.scores(d, n, a.q + int64_t{h} * d, rows, a.scale,
                               scores + int64_t{h} * a.kv_len + j0));
    }
  }
  for (int h = 0; h < a.num_heads; ++h) {
    float& m = per_head[static_cast<size_t>(h)];
    m = 1.0f / k.exp_sum(scores + int64_t{h} * a.kv_len, a.kv_len, m);
  }
  std::fill(a.out, a.out + int64_t{a.num_heads} * d, 0.0f);
  for (int b = 0; b < blocks; ++b) {
    const int j0 = b * a.block_size, n = std::min(a.block_size, a.kv_len - j0);
    for (int h = 0; h < a.num_heads; ++h) {
      const int g = h / a.group;
      if (h % a.group == 0) {
        PrefetchAheadInPass(a.vblock, blocks, b, g, kv_heads, ahead, a.head_stride, rows_elems);
      }
      k.accumulate(n, scores + int64_t{h} * a.kv_len + j0, a.vblock[b] + g * a.head_stride, d,
                   a.out + int64_t{h} * d);
    }
  }
  for (int h = 0; h < a.num_heads; ++h) {
    float* o = a.out + int64_t{h} * d;
    for (int c = 0; c < d; ++c) o[c] *= per_head[static_cast<size_t>(h)];
  }
}

// row[j] = softmax_j(scale * row[j]) for j in [0, n), then zeros in [n, width).
ORCA_AVX512 void SoftmaxRowAvx512(float* row, int n, int width, float scale) {
  const __m512 vscale = _mm512_set1_ps(scale);
  __m512 vmax = _mm512_set1_ps(-INFINITY);
  for (int j = 0; j < n; j += 16) {
    const __mmask16 m = FirstLanes(std::min(16, n - j));
    const __m512 x = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, row + j), vscale);
    _mm512_mask_storeu_ps(row + j, m, x);
    vmax = _mm512_mask_max_ps(vmax, m, vmax, x);
  }
  const __m512 mx = _mm512_set1_ps(_mm512_reduce_max_ps(vmax));
  __m512 vsum = _mm512_setzero_ps();
  for (int j = 0; j < n; j += 16) {
    const __mmask16 m = FirstLanes(std::min(16, n - j));
    const __m512 e = Exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, row + j), mx));
    _mm512_mask_storeu_ps(row + j, m, e);
    vsum = _mm512_mask_add_ps(vsum, m, vsum, e);
  }
  const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(vsum));
  for (int j = 0; j < n; j += 16) {
    const __mmask16 m = FirstLanes(std::min(16, n - j));
    _mm512_mask_storeu_ps(row + j, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, row + j), inv));
  }
  std::fill(row + n, row + width, 0.0f);
}

// K's rows [0, kv_len) as an [kv_len, d] weight in PackWeights' layout (element (j, c)
// at ((j / 16) * d + c) * 16 + j % 16): each row widened sixteen columns at a time and
// scattered down its panel; the panels' padding rows zero.
template <typename T>
ORCA_AVX512 void PackKeysAvx512(int d, int kv_len, const T* const* krow, float* kp) {
  const int64_t rows = PackedWeightFloats(kv_len, d) / d;
  const int64_t full = kv_len / kPanelRows * kPanelRows;
  std::fill(kp + full * d, kp + rows * d, 0.0f);
  const __m512i lanes =
      _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                         _mm512_set1_epi32(kPanelRows));
  for (int j = 0; j < kv_len; ++j) {
    float* dst = kp + int64_t{j / kPanelRows} * d * kPanelRows + j % kPanelRows;
    for (int c = 0; c < d; c += 16) {
      const __mmask16 m = FirstLanes(std::min(16, d - c));
      _mm512_mask_i32scatter_ps(dst + int64_t{c} * kPanelRows, m, lanes, LoadPart16(krow[j] + c, m),
                                4);
    }
  }
}

// V's rows [0, kv_len) as a [d, kv_len] weight in the same layout (element (dim j,
// key c) at ((j / 16) * kv_len + c) * 16 + j % 16): a value row's sixteen columns of a
// panel are contiguous there, one widened load and one store each.
template <typename T>
ORCA_AVX512 void PackValuesAvx512(int d, int kv_len, const T* const* vrow, float* vp) {
  const int panels = (d + kPanelRows - 1) / kPanelRows;
  const int64_t total = PackedWeightFloats(d, kv_len);
  std::fill(vp + int64_t{panels} * kv_len * kPanelRows, vp + total, 0.0f);
  for (int c = 0; c < kv_len; ++c) {
    for (int p = 0; p < panels; ++p) {
      const __mmask16 m = FirstLanes(std::min(16, d - p * kPanelRows));
      _mm512_storeu_ps(vp + (int64_t{p} * kv_len + c) * kPanelRows,
                       LoadPart16(vrow[c] + p * kPanelRows, m));
    }
  }
}

// SoftmaxRowAvx512 on eight lanes. The last partial group goes through a copy padded
// with -inf (its exponentials zero) rather than masked loads and stores, which AMD
// microcodes (a third of the chunk's time on a Zen 3).
ORCA_AVX2 void SoftmaxRowAvx2(float* row, int n, int width, float scale) {
  const int full = n / 8 * 8;
  alignas(32) float tail[8];
  for (int i = 0; i < 8; ++i) tail[i] = full + i < n ? row[full + i] * scale : -INFINITY;
  const __m256 vscale = _mm256_set1_ps(scale);
  __m256 vmax = _mm256_load_ps(tail);
  for (int j = 0; j < full; j += 8) {
    const __m256 x = _mm256_mul_ps(_mm256_loadu_ps(row + j), vscale);
    _mm256_storeu_ps(row + j, x);
    vmax = _mm256_max_ps(vmax, x);
  }
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
  const __m256 mx = _mm256_set1_ps(_mm_cvtss_f32(m4));
  // exp(-inf - max) clamps to exp(-87), not 0: the padding lanes are masked out.
  const __m256 live = _mm256_cmp_ps(_mm256_load_ps(tail), _mm256_set1_ps(-INFINITY), _CMP_NEQ_OQ);
  const __m256 et = _mm256_and_ps(Exp8(_mm256_sub_ps(_mm256_load_ps(tail), mx)), live);
  _mm256_store_ps(tail, et);
  __m256 vsum = et;
  for (int j = 0; j < full; j += 8) {
    const __m256 e = Exp8(_mm256_sub_ps(_mm256_loadu_ps(row + j), mx));
    _mm256_storeu_ps(row + j, e);
    vsum = _mm256_add_ps(vsum, e);
  }
  const float inv = 1.0f / Sum8(vsum);
  const __m256 vinv = _mm256_set1_ps(inv);
  for (int j = 0; j < full; j += 8) {
    _mm256_storeu_ps(row + j, _mm256_mul_ps(_mm256_loadu_ps(row + j), vinv));
  }
  for (int j = full; j < n; ++j) row[j] = tail[j - full] * inv;
  std::fill(row + n, row + width, 0.0f);
}

// PackKeysAvx512 without scatters: eight keys by eight columns widened, transposed in
// registers and stored down their panel; the columns and keys past the last whole group
// of eight one element at a time.
template <typename T>
ORCA_AVX2 void PackKeysAvx2(int d, int kv_len, const T* const* krow, float* kp) {
  const int64_t rows = PackedWeightFloats(kv_len, d) / d;
  const int64_t full = kv_len / kPanelRows * kPanelRows;
  std::fill(kp + full * d, kp + rows * d, 0.0f);
  auto at = [&](int j, int c) {
    return kp + (int64_t{j / kPanelRows} * d + c) * kPanelRows + j % kPanelRows;
  };
  const int keys8 = kv_len / 8 * 8, cols8 = d / 8 * 8;
  for (int j = 0; j < keys8; j += 8) {
    for (int c = 0; c < cols8; c += 8) {
      __m256 r[8];
      for (int i = 0; i < 8; ++i) r[i] = Load8(krow[j + i] + c);
      Transpose8x8(r);
      for (int i = 0; i < 8; ++i) _mm256_storeu_ps(at(j, c + i), r[i]);
    }
    for (int i = 0; i < 8; ++i) {
      for (int c = cols8; c < d; ++c) *at(j + i, c) = ToF32(krow[j + i][c]);
    }
  }
  for (int j = keys8; j < kv_len; ++j) {
    for (int c = 0; c < d; ++c) *at(j, c) = ToF32(krow[j][c]);
  }
}

// PackValuesAvx512 in two eight-lane loads per panel; a partial last panel one element
// at a time.
template <typename T>
ORCA_AVX2 void PackValuesAvx2(int d, int kv_len, const T* const* vrow, float* vp) {
  const int panels = (d + kPanelRows - 1) / kPanelRows;
  const int64_t total = PackedWeightFloats(d, kv_len);
  std::fill(vp + int64_t{panels} * kv_len * kPanelRows, vp + total, 0.0f);
  for (int c = 0; c < kv_len; ++c) {
    for (int p = 0; p < panels; ++p) {
      float* dst = vp + (int64_t{p} * kv_len + c) * kPanelRows;
      const T* src = vrow[c] + p * kPanelRows;
      const int n = std::min(kPanelRows, d - p * kPanelRows);
      if (n == kPanelRows) {
        _mm256_storeu_ps(dst, Load8(src));
        _mm256_storeu_ps(dst + 8, Load8(src + 8));
      } else {
        for (int i = 0; i < kPanelRows; ++i) dst[i] = i < n ? ToF32(src[i]) : 0.0f;
      }
    }
  }
}

// A prefill chunk's attention as two GEMMs on packed_gemm.h's kernels (AVX-512's or
// AVX2's tiles, `level`): S = Q K^T, each row's causal softmax, then O = P V. Every key
// and value row is widened once for all the query rows, where the row-at-a-time kernel
// widens and reads each once per row and reduces every dot product horizontally. S runs
// in blocks of 64 query rows over the keys the block's last row sees, and so does P V
// (over the packed values' first keys), so the causal upper triangle costs little: a
// 64-row block's own diagonal block.
template <typename T>
void AttendByGemm(int d, int q_len, int kv_len, const float* q, int64_t ldq, const T* const* krow,
                  const T* const* vrow, float scale, float* out, int64_t ldo, SimdLevel level) {
  constexpr int kRowBlock = 64;
  const bool avx512 = level == SimdLevel::kAvx512;
  thread_local std::vector<float> kp, vp, s;
  kp.resize(static_cast<size_t>(PackedWeightFloats(kv_len, d)));
  vp.resize(static_cast<size_t>(PackedWeightFloats(d, kv_len)));
  s.resize(static_cast<size_t>(std::min(q_len, kRowBlock)) * kv_len);  // one block's scores
  if (avx512) {
    PackKeysAvx512(d, kv_len, krow, kp.data());
    PackValuesAvx512(d, kv_len, vrow, vp.data());
  } else {
    PackKeysAvx2(d, kv_len, krow, kp.data());
    PackValuesAvx2(d, kv_len, vrow, vp.data());
  }
  const ParallelForFn serial = [](int64_t count, const std::function<void(int64_t)>& fn) {
    for (int64_t i = 0; i < count; ++i) fn(i);
  };
  for (int r0 = 0; r0 < q_len; r0 += kRowBlock) {
    const int rows = std::min(kRowBlock, q_len - r0);
    const int seen = kv_len - q_len + r0 + rows;  // keys the block's last row attends to
    float* sb = s.data();
    PackedGemm(rows, seen, d, q + r0 * ldq, ldq, kp.data(), nullptr, sb, kv_len, serial, level);
    for (int i = 0; i < rows; ++i) {
      float* row = sb + int64_t{i} * kv_len;
      if (avx512) {
        SoftmaxRowAvx512(row, seen - rows + i + 1, seen, scale);
      } else {
        SoftmaxRowAvx2(row, seen - rows + i + 1, seen, scale);
      }
    }
    PackedGemmPrefix(rows, d, seen, kv_len, sb, kv_len, vp.data(), out + int64_t{r0} * ldo, ldo,
                     serial, level);
  }
}

// Sixteen elements of a cached row from c on (those past n zero) as bfloat16 bits:
// exact for bfloat16 rows, rounded to nearest even from float32 and float16.
template <typename T>
ORCA_AVX512_BF16 inline __m256i Bf16Of16(const T* row, int c, int n) {
  const __m256bh b = _mm512_cvtneps_pbh(LoadPart16(row + c, FirstLanes(std::max(0, n - c))));
  __m256i bits;
  std::memcpy(&bits, &b, sizeof(bits));
  return bits;
}

// K's rows [0, kv_len) as a bfloat16 weight [keys, d] in packed_gemm_bf16.h's layout
// (element (j, c) at ((j / 16) * pairs + c / 2) * 32 + (j % 16) * 2 + c % 2, pairs =
// ceil(d / 2)), `keys` rows of it (kv_len rounded up to 32), the rows and the last pair's
// odd column past the cache zero: each key's pairs scattered down its panel, 32 bits a pair.
template <typename T>
ORCA_AVX512_BF16 void PackKeysBf16(int d, int kv_len, int keys, const T* const* krow,
                                   uint16_t* kp) {
  const int pairs = (d + 1) / 2;
  std::fill(kp, kp + int64_t{keys} * pairs * 2, uint16_t{0});
  const __m512i lanes =
      _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                         _mm512_set1_epi32(kPanelRows));
  for (int j = 0; j < kv_len; ++j) {
    uint32_t* dst =
        reinterpret_cast<uint32_t*>(kp + int64_t{j / kPanelRows} * pairs * 32) + j % kPanelRows;
    for (int c = 0; c < d; c += 32) {
      // Pairs c / 2 .. c / 2 + 15: the two halves' bfloat16s, in order, as 16 dwords.
      const __m512i row = _mm512_inserti64x4(_mm512_castsi256_si512(Bf16Of16(krow[j], c, d)),
                                             Bf16Of16(krow[j], c + 16, d), 1);
      const __mmask16 m = FirstLanes(pairs - c / 2);
      _mm512_mask_i32scatter_epi32(dst + int64_t{c / 2} * kPanelRows, m, lanes, row, 4);
    }
  }
}

// V's rows [0, kv_len) as a bfloat16 weight [d, keys] in the same layout (element (dim
// c, key j) at ((c / 16) * (keys / 2) + j / 2) * 32 + (c % 16) * 2 + j % 2), `panels`
// panels (d rounded up to 32, so panels pair up), keys and dims past the cache zero: a
// key pair's sixteen dims of a panel interleaved into one 64-byte line.
template <typename T>
ORCA_AVX512_BF16 void PackValuesBf16(int d, int kv_len, int keys, int panels, const T* const* vrow,
                                     uint16_t* vp) {
  const int64_t key_pairs = keys / 2;
  std::fill(vp, vp + panels * key_pairs * 32, uint16_t{0});
  for (int j = 0; j < kv_len; j += 2) {
    for (int p = 0; p * kPanelRows < d; ++p) {
      const __m512i even = _mm512_cvtepu16_epi32(Bf16Of16(vrow[j], p * kPanelRows, d));
      const __m512i odd = j + 1 < kv_len
                              ? _mm512_cvtepu16_epi32(Bf16Of16(vrow[j + 1], p * kPanelRows, d))
                              : _mm512_setzero_si512();
      _mm512_storeu_si512(vp + (p * key_pairs + j / 2) * 32,
                          _mm512_or_si512(even, _mm512_slli_epi32(odd, 16)));
    }
  }
}

// dst[j] = softmax_j(scale * row[j]) for j in [0, n), then zeros in [n, width) (a
// multiple of 16), as bfloat16 bits; row's first n elements are left as the
// exponentials. scale > 0 (attention's 1 / sqrt(head_dim)): the scaled maximum is the
// maximum scaled. One pass fewer than SoftmaxRowAvx512 and RoundToBf16.
ORCA_AVX512_BF16 void SoftmaxRowToBf16(float* row, int n, int width, float scale, uint16_t* dst) {
  __m512 vmax = _mm512_set1_ps(-INFINITY);
  for (int j = 0; j < n; j += 16) {
    const __mmask16 m = FirstLanes(std::min(16, n - j));
    vmax = _mm512_mask_max_ps(vmax, m, vmax, _mm512_maskz_loadu_ps(m, row + j));
  }
  const __m512 vscale = _mm512_set1_ps(scale);
  const __m512 shift = _mm512_set1_ps(-_mm512_reduce_max_ps(vmax) * scale);
  __m512 vsum = _mm512_setzero_ps();
  for (int j = 0; j < n; j += 16) {
    const __mmask16 m = FirstLanes(std::min(16, n - j));
    const __m512 e = Exp16(_mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, row + j), vscale, shift));
    _mm512_mask_storeu_ps(row + j, m, e);
    vsum = _mm512_mask_add_ps(vsum, m, vsum, e);
  }
  const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(vsum));
  for (int j = 0; j < width; j += 16) {
    const __mmask16 m = FirstLanes(std::max(0, std::min(16, n - j)));
    const __m256bh b = _mm512_cvtneps_pbh(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, row + j), inv));
    std::memcpy(dst + j, &b, sizeof(b));
  }
}

// AttendByGemm's two GEMMs with bfloat16 products on AMX tiles (packed_gemm_amx.h's
// panel-pair blocks): q rows, K and V rounded to bfloat16, S = Q K^T in blocks of 32
// query rows by 32 keys over the keys the block's last row sees, the causal softmax in
// float32, the probabilities rounded to bfloat16, O = P V a panel pair (32 dims) at a
// time. Only where CpuHasAmxBf16().
template <typename T>
ORCA_AVX512_BF16 void AttendByAmx(int d, int q_len, int kv_len, const float* q, int64_t ldq,
                                  const T* const* krow, const T* const* vrow, float scale,
                                  float* out, int64_t ldo) {
  constexpr int kRowBlock = 32;
  const int pairs = (d + 1) / 2;
  const int ldqr = static_cast<int>(packed_internal::AmxPairs(pairs)) * 2;
  const int keys = (kv_len + 31) / 32 * 32;  // also P's row stride
  const int panels = (d + 31) / 32 * 2;
  thread_local std::vector<uint16_t> kp, vp, qr, pr;
  thread_local std::vector<float> s;
  kp.resize(static_cast<size_t>(keys) * pairs * 2);
  vp.resize(static_cast<size_t>(panels) * keys * 16);
  qr.assign(static_cast<size_t>(kRowBlock) * ldqr, 0);  // rows and pairs past q: zero
  pr.assign(static_cast<size_t>(kRowBlock) * keys, 0);
  s.resize(static_cast<size_t>(kRowBlock) * keys);
  PackKeysBf16(d, kv_len, keys, krow, kp.data());
  PackValuesBf16(d, kv_len, keys, panels, vrow, vp.data());
  const packed_internal::AmxTileScope tiles;
  for (int r0 = 0; r0 < q_len; r0 += kRowBlock) {
    const int rows = std::min(kRowBlock, q_len - r0);
    const int seen = kv_len - q_len + r0 + rows;  // keys the block's last row attends to
    const int width = (seen + 31) / 32 * 32;
    for (int i = 0; i < rows; ++i) RoundToBf16(q + (r0 + i) * ldq, d, qr.data() + i * ldqr);
    for (int c0 = 0; c0 < seen; c0 += 32) {
      packed_internal::AmxPanelPairBlockInScope(
          rows, pairs, qr.data(), ldqr, kp.data() + int64_t{c0 / kPanelRows} * pairs * 32,
          int64_t{pairs} * 32, s.data() + c0, keys, std::min(32, seen - c0), nullptr, false);
    }
    for (int i = 0; i < rows; ++i) {
      SoftmaxRowToBf16(s.data() + int64_t{i} * keys, seen - rows + i + 1, width, scale,
                       pr.data() + int64_t{i} * keys);
    }
    for (int p = 0; p * kPanelRows < d; p += 2) {
      packed_internal::AmxPanelPairBlockInScope(
          rows, (seen + 1) / 2, pr.data(), keys, vp.data() + int64_t{p} * keys * 16,
          int64_t{keys} * 16, out + int64_t{r0} * ldo + p * kPanelRows, ldo,
          std::min(32, d - p * kPanelRows), nullptr, false);
    }
  }
}

}  // namespace

namespace internal {

template <typename T>
void StoreKvRowPortable(const float* src, int n, T* dst) {
  for (int i = 0; i < n; ++i) FromF32(src[i], dst + i);
}

}  // namespace internal

template <typename T>
void AttendOneHead(int head_dim, int q_len, int kv_len, const float* q, int64_t ldq,
                   const T* const* krow, const T* const* vrow, float scale, float* scores,
                   float* out, int64_t ldo, SimdLevel level, AttentionProducts products) {
  level = std::min(level, CpuMaxSimdLevel());
  if (level >= SimdLevel::kAvx2 && q_len >= kGemmAttentionMinRows &&
      int64_t{q_len} * kv_len <= kGemmAttentionMaxScores) {
    if (level == SimdLevel::kAvx512 && products == AttentionProducts::kBf16Allowed &&
        CpuHasAmxBf16()) {
      return AttendByAmx(head_dim, q_len, kv_len, q, ldq, krow, vrow, scale, out, ldo);
    }
    return AttendByGemm(head_dim, q_len, kv_len, q, ldq, krow, vrow, scale, out, ldo, level);
  }
  switch (level) {
    case SimdLevel::kAvx512:
      return AttendAvx512(head_dim, q_len, kv_len, q, ldq, krow, vrow, scale, scores, out, ldo);
    case SimdLevel::kAvx2:
      return AttendAvx2(head_dim, q_len, kv_len, q, ldq, krow, vrow, scale, scores, out, ldo);
    case SimdLevel::kScalar:
      return AttendScalar(head_dim, q_len, kv_len, q, ldq, krow, vrow, scale, scores, out, ldo);
  }
}

template <typename T>
void AttendDecodeHeads(const DecodeHeads<T>& a, float* scores, SimdLevel level) {
  level = std::min(level, CpuMaxSimdLevel());
  if (level == SimdLevel::kAvx512 && a.block_size <= 64) {
    return AttendDecodeHeadsWith(
        a, scores, DecodeKernels<T>{&ScoresAvx512<T>, &ExpSumAvx512, &AccumulateRowsAvx512<T>});
  }
  if (level == SimdLevel::kAvx2 && a.block_size <= 64) {
    return AttendDecodeHeadsWith(
        a, scores, DecodeKernels<T>{&ScoresAvx2<T>, &ExpSumAvx2, &AccumulateRowsAvx2<T>});
  }
  // Elsewhere one head at a time, its rows gathered from the blocks.
  std::vector<const T*> krow(static_cast<size_t>(a.kv_len)), vrow(krow.size());
  for (int h = 0; h < a.num_heads; ++h) {
    const int64_t at = int64_t{h / a.group} * a.head_stride;
    for (int j = 0; j < a.kv_len; ++j) {
      const int64_t in_block = int64_t{j % a.block_size} * a.head_dim;
      krow[static_cast<size_t>(j)] = a.kblock[j / a.block_size] + at + in_block;
      vrow[static_cast<size_t>(j)] = a.vblock[j / a.block_size] + at + in_block;
    }
    AttendOneHead(a.head_dim, 1, a.kv_len, a.q + int64_t{h} * a.head_dim, a.head_dim, krow.data(),
                  vrow.data(), a.scale, scores, a.out + int64_t{h} * a.head_dim, a.head_dim, level);
  }
}

template <typename T>
void StoreKvRow(const float* src, int n, T* dst) {
  if constexpr (std::is_same_v<T, Fp16>) {
    if (CpuSimdLevel() >= SimdLevel::kAvx2) return StoreF16Avx2(src, n, dst);
  }
  internal::StoreKvRowPortable(src, n, dst);
}

#define ORCA_INSTANTIATE_KV(T)                                                               \
  template void AttendOneHead<T>(int, int, int, const float*, int64_t, const T* const*,      \
                                 const T* const*, float, float*, float*, int64_t, SimdLevel, \
                                 AttentionProducts);                                         \
  template void AttendDecodeHeads<T>(const DecodeHeads<T>&, float*, SimdLevel);              \
  template void StoreKvRow<T>(const float*, int, T*);                                        \
  template void internal::StoreKvRowPortable<T>(const float*, int, T*);
ORCA_INSTANTIATE_KV(float)
ORCA_INSTANTIATE_KV(Fp16)
ORCA_INSTANTIATE_KV(Bf16)
#undef ORCA_INSTANTIATE_KV

}  // namespace orca
