// GCC 12 reports the AVX-512 intrinsics' own _mm512_undefined_* inputs as "may be used
// uninitialized" once they are inlined (false positives; GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "engine/backend/cpu/activation_kernel.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "engine/backend/cpu/vec_exp.h"

namespace orca {
namespace {

void RowScalar(const float* gate, const float* up, int64_t n, Activation act, float* out) {
  for (int64_t j = 0; j < n; ++j) {
    const float a = ActivationScalar(gate[j], act);
    out[j] = up != nullptr ? a * up[j] : a;
  }
}

ORCA_AVX512 void SiluAvx512(const float* gate, const float* up, int64_t n, float* out) {
  const __m512 one = _mm512_set1_ps(1.0f), low = _mm512_set1_ps(-88.0f);
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = FirstLanes(static_cast<int>(std::min<int64_t>(16, n - j)));
    const __m512 x = _mm512_maskz_loadu_ps(m, gate + j);
    __m512 y = _mm512_div_ps(x, _mm512_add_ps(one, Exp16(_mm512_sub_ps(_mm512_setzero_ps(), x))));
    // Below -88, where exp(-x) is clamped: |silu| < 1e-36 (NaN compares false and stays).
    y = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, low, _CMP_LT_OQ), y, _mm512_setzero_ps());
    if (up != nullptr) y = _mm512_mul_ps(y, _mm512_maskz_loadu_ps(m, up + j));
    _mm512_mask_storeu_ps(out + j, m, y);
  }
}

__attribute__((target("avx2,fma"))) void SiluAvx2(const float* gate, const float* up, int64_t n,
                                                  float* out) {
  const __m256 one = _mm256_set1_ps(1.0f), low = _mm256_set1_ps(-88.0f);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 x = _mm256_loadu_ps(gate + j);
    __m256 y = _mm256_div_ps(x, _mm256_add_ps(one, Exp8(_mm256_sub_ps(_mm256_setzero_ps(), x))));
    y = _mm256_andnot_ps(_mm256_cmp_ps(x, low, _CMP_LT_OQ), y);  // as SiluAvx512
    if (up != nullptr) y = _mm256_mul_ps(y, _mm256_loadu_ps(up + j));
    _mm256_storeu_ps(out + j, y);
  }
  RowScalar(gate + j, up != nullptr ? up + j : nullptr, n - j, Activation::kSilu, out + j);
}

}  // namespace

float ActivationScalar(float x, Activation act) {
  switch (act) {
    case Activation::kSilu:
      return x / (1.0f + std::exp(-x));
    case Activation::kGeluTanh: {
      constexpr float kC = 0.7978845608028654f;  // sqrt(2/pi)
      return 0.5f * x * (1.0f + std::tanh(kC * (x + 0.044715f * x * x * x)));
    }
    case Activation::kGeluErf:
      return 0.5f * x * (1.0f + std::erf(x * 0.7071067811865476f));
  }
  return x;
}

void ActivationRow(const float* gate, const float* up, int64_t n, Activation act, float* out,
                   SimdLevel level) {
  if (act == Activation::kSilu) {
    switch (std::min(level, CpuMaxSimdLevel())) {
      case SimdLevel::kAvx512:
        return SiluAvx512(gate, up, n, out);
      case SimdLevel::kAvx2:
        return SiluAvx2(gate, up, n, out);
      case SimdLevel::kScalar:
        break;
    }
  }
  RowScalar(gate, up, n, act, out);
}

}  // namespace orca
