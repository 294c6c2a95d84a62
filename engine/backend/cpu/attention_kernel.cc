#include "engine/backend/cpu/attention_kernel.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "engine/backend/cpu/simd.h"

namespace orca {
namespace {

void AttendScalar(int d, int q_len, int kv_len, const float* q, int64_t ldq,
                  const float* const* krow, const float* const* vrow, float scale, float* scores,
                  float* out, int64_t ldo) {
  for (int i = 0; i < q_len; ++i) {
    const int pos = kv_len - q_len + i;
    const float* qv = q + i * ldq;
    float max_score = -INFINITY;
    for (int j = 0; j <= pos; ++j) {
      float dot = 0;
      for (int c = 0; c < d; ++c) dot += qv[c] * krow[j][c];
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
      for (int c = 0; c < d; ++c) o[c] += scores[j] * vrow[j][c];
    }
    const float inv = 1.0f / sum;
    for (int c = 0; c < d; ++c) o[c] *= inv;
  }
}

// exp(x) for x <= 0 (scores minus their maximum), Cephes' expf polynomial: relative
// error about 2e-7. Inputs below -87 give exp(-87) ~ 1.6e-38, not 0: negligible next to
// the maximum's 1.
__attribute__((target("avx2,fma"))) inline __m256 Exp8(__m256 x) {
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.0f));
  const __m256 fx = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, x, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, x, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, x, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, x, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, x, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(x, x), x), _mm256_set1_ps(1.0f));
  const __m256i e =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

__attribute__((target("avx2,fma"))) void AttendAvx2(int d, int q_len, int kv_len, const float* q,
                                                    int64_t ldq, const float* const* krow,
                                                    const float* const* vrow, float scale,
                                                    float* scores, float* out, int64_t ldo) {
  const int d8 = d & ~7;
  for (int i = 0; i < q_len; ++i) {
    const int n = kv_len - q_len + i + 1;  // keys [0, n)
    const float* qv = q + i * ldq;
    // Scores; two accumulators over the columns give two independent FMA chains.
    float max_score = -INFINITY;
    for (int j = 0; j < n; ++j) {
      const float* kv = krow[j];
      __m256 a = _mm256_setzero_ps(), b = _mm256_setzero_ps();
      int c = 0;
      for (; c + 16 <= d8; c += 16) {
        a = _mm256_fmadd_ps(_mm256_loadu_ps(qv + c), _mm256_loadu_ps(kv + c), a);
        b = _mm256_fmadd_ps(_mm256_loadu_ps(qv + c + 8), _mm256_loadu_ps(kv + c + 8), b);
      }
      if (c < d8) a = _mm256_fmadd_ps(_mm256_loadu_ps(qv + c), _mm256_loadu_ps(kv + c), a);
      float dot = Sum8(_mm256_add_ps(a, b));
      for (c = d8; c < d; ++c) dot += qv[c] * kv[c];
      scores[j] = dot * scale;
      max_score = std::max(max_score, scores[j]);
    }
    // Softmax numerators and their sum.
    const __m256 vmax = _mm256_set1_ps(max_score);
    __m256 vsum = _mm256_setzero_ps();
    int j = 0;
    for (; j + 8 <= n; j += 8) {
      const __m256 e = Exp8(_mm256_sub_ps(_mm256_loadu_ps(scores + j), vmax));
      _mm256_storeu_ps(scores + j, e);
      vsum = _mm256_add_ps(vsum, e);
    }
    float sum = Sum8(vsum);
    for (; j < n; ++j) {
      scores[j] = std::exp(scores[j] - max_score);
      sum += scores[j];
    }
    const float inv = 1.0f / sum;
    // out = sum_j p_j v_j, 32 columns at a time with the accumulators in registers.
    float* o = out + i * ldo;
    int c = 0;
    for (; c + 32 <= d8; c += 32) {
      __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
      for (int jj = 0; jj < n; ++jj) {
        const __m256 p = _mm256_broadcast_ss(scores + jj);
        const float* vv = vrow[jj] + c;
        a0 = _mm256_fmadd_ps(p, _mm256_loadu_ps(vv), a0);
        a1 = _mm256_fmadd_ps(p, _mm256_loadu_ps(vv + 8), a1);
        a2 = _mm256_fmadd_ps(p, _mm256_loadu_ps(vv + 16), a2);
        a3 = _mm256_fmadd_ps(p, _mm256_loadu_ps(vv + 24), a3);
      }
      const __m256 vinv = _mm256_set1_ps(inv);
      _mm256_storeu_ps(o + c, _mm256_mul_ps(a0, vinv));
      _mm256_storeu_ps(o + c + 8, _mm256_mul_ps(a1, vinv));
      _mm256_storeu_ps(o + c + 16, _mm256_mul_ps(a2, vinv));
      _mm256_storeu_ps(o + c + 24, _mm256_mul_ps(a3, vinv));
    }
    for (; c + 8 <= d8; c += 8) {
      __m256 a0 = _mm256_setzero_ps();
      for (int jj = 0; jj < n; ++jj) {
        a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(scores + jj), _mm256_loadu_ps(vrow[jj] + c), a0);
      }
      _mm256_storeu_ps(o + c, _mm256_mul_ps(a0, _mm256_set1_ps(inv)));
    }
    for (; c < d; ++c) {
      float acc = 0;
      for (int jj = 0; jj < n; ++jj) acc += scores[jj] * vrow[jj][c];
      o[c] = acc * inv;
    }
  }
}

}  // namespace

void AttendOneHead(int head_dim, int q_len, int kv_len, const float* q, int64_t ldq,
                   const float* const* krow, const float* const* vrow, float scale, float* scores,
                   float* out, int64_t ldo) {
  if (CpuHasAvx2Fma()) {
    AttendAvx2(head_dim, q_len, kv_len, q, ldq, krow, vrow, scale, scores, out, ldo);
  } else {
    AttendScalar(head_dim, q_len, kv_len, q, ldq, krow, vrow, scale, scores, out, ldo);
  }
}

}  // namespace orca
