#include "engine/backend/cpu/small_gemm.h"

#include <immintrin.h>

#include <algorithm>

namespace orca {
namespace {

constexpr int64_t kRowsPerTask = 32;

// Portable version: plain loops over one block of weight rows.
void BlockScalar(int m, int k, const float* x, int64_t ldx, const float* w, int64_t n0, int64_t n1,
                 const float* bias, float* out, int64_t ldo) {
  for (int64_t j = n0; j < n1; ++j) {
    const float* wr = w + j * k;
    for (int r = 0; r < m; ++r) {
      const float* xr = x + r * ldx;
      float acc = 0;
      for (int c = 0; c < k; ++c) acc += xr[c] * wr[c];
      out[r * ldo + j] = acc + (bias ? bias[j] : 0.0f);
    }
  }
}

__attribute__((target("avx2,fma"))) float HorizontalSum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
  return _mm_cvtss_f32(lo);
}

// AVX2 version: each weight row is loaded once per 8-wide chunk and multiplied into up
// to 4 rows of x at a time (4 accumulators in flight).
__attribute__((target("avx2,fma"))) void BlockAvx2(int m, int k, const float* x, int64_t ldx, const float* w,
                                                   int64_t n0, int64_t n1, const float* bias, float* out,
                                                   int64_t ldo) {
  const int k8 = k & ~7;
  for (int64_t j = n0; j < n1; ++j) {
    const float* wr = w + j * k;
    for (int r0 = 0; r0 < m; r0 += 4) {
      const int rows = std::min(4, m - r0);
      __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
      for (int c = 0; c < k8; c += 8) {
        const __m256 wv = _mm256_loadu_ps(wr + c);
        for (int r = 0; r < rows; ++r) {
          acc[r] = _mm256_fmadd_ps(_mm256_loadu_ps(x + (r0 + r) * ldx + c), wv, acc[r]);
        }
      }
      for (int r = 0; r < rows; ++r) {
        float s = HorizontalSum(acc[r]);
        const float* xr = x + (r0 + r) * ldx;
        for (int c = k8; c < k; ++c) s += xr[c] * wr[c];
        out[(r0 + r) * ldo + j] = s + (bias ? bias[j] : 0.0f);
      }
    }
  }
}

bool HasAvx2Fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

}  // namespace

void SmallGemm(int m, int n, int k, const float* x, int64_t ldx, const float* w, const float* bias, float* out,
               int64_t ldo,
               const std::function<void(int64_t, const std::function<void(int64_t)>&)>& parallel_for) {
  const int64_t tasks = (n + kRowsPerTask - 1) / kRowsPerTask;
  const bool avx2 = HasAvx2Fma();
  parallel_for(tasks, [&](int64_t t) {
    const int64_t n0 = t * kRowsPerTask, n1 = std::min<int64_t>(n, n0 + kRowsPerTask);
    if (avx2) {
      BlockAvx2(m, k, x, ldx, w, n0, n1, bias, out, ldo);
    } else {
      BlockScalar(m, k, x, ldx, w, n0, n1, bias, out, ldo);
    }
  });
}

}  // namespace orca
