// GCC 12 reports the AVX-512 intrinsics' own _mm512_undefined_* inputs as "may be used
// uninitialized" once they are inlined (false positives; GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "engine/backend/cpu/norm_kernel.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

namespace orca {
namespace {

// The float64 term a sum adds per element: x, x^2, or (x - m)^2.
enum class Term { kValue, kSquare, kSquaredDeviation };

// Each level's pieces of a norm: Add(x, delta) adds the residual in place,
// Fold<term>(x, n, m) sums term over x in float64, Scale writes the output.
//
// The scalar path: eight interleaved float64 partial sums (independent adds the CPU
// overlaps), added pairwise at the end.
struct Scalar {
  static void Add(float* x, const float* delta, int64_t n) {
    for (int64_t j = 0; j < n; ++j) x[j] += delta[j];
  }
  template <Term term>
  static double Fold(const float* x, int64_t n, double m = 0) {
    double part[8] = {};
    const auto add = [&](int64_t j) {
      const double d = term == Term::kSquaredDeviation ? x[j] - m : x[j];
      part[j % 8] += term == Term::kValue ? d : d * d;
    };
    for (int64_t j = 0; j < n; ++j) add(j);
    return ((part[0] + part[4]) + (part[1] + part[5])) +
           ((part[2] + part[6]) + (part[3] + part[7]));
  }
  static void Scale(const float* x, float m, float inv, const float* w, const float* b, int64_t n,
                    float* out) {
    for (int64_t j = 0; j < n; ++j) {
      out[j] = b != nullptr ? (x[j] - m) * inv * w[j] + b[j] : x[j] * inv * w[j];
    }
  }
};

ORCA_AVX2 inline double Reduce4(__m256d v) {
  const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

ORCA_AVX2 inline __m256d Add4(__m256d acc, __m256d d, __m256d m, Term term) {
  if (term == Term::kValue) return _mm256_add_pd(acc, d);
  if (term == Term::kSquaredDeviation) d = _mm256_sub_pd(d, m);
  return _mm256_fmadd_pd(d, d, acc);
}

ORCA_AVX512 inline __m512d Add8(__m512d acc, __m512d d, __m512d m, __mmask8 lanes, Term term) {
  if (term == Term::kValue) return _mm512_add_pd(acc, d);
  if (term == Term::kSquaredDeviation) d = _mm512_maskz_sub_pd(lanes, d, m);  // past n: 0, not -m
  return _mm512_fmadd_pd(d, d, acc);
}

// Eight floats a step as two float64 halves into two partial sums; the tail scalar.
struct Avx2 {
  static ORCA_AVX2 void Add(float* x, const float* delta, int64_t n) {
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
      _mm256_storeu_ps(x + j, _mm256_add_ps(_mm256_loadu_ps(x + j), _mm256_loadu_ps(delta + j)));
    }
    for (; j < n; ++j) x[j] += delta[j];
  }
  template <Term term>
  static ORCA_AVX2 double Fold(const float* x, int64_t n, double m = 0) {
    const __m256d vm = _mm256_set1_pd(m);
    __m256d a0 = _mm256_setzero_pd(), a1 = a0;
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
      const __m256 v = _mm256_loadu_ps(x + j);
      a0 = Add4(a0, _mm256_cvtps_pd(_mm256_castps256_ps128(v)), vm, term);
      a1 = Add4(a1, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)), vm, term);
    }
    double s = Reduce4(_mm256_add_pd(a0, a1));
    for (; j < n; ++j) {
      const double d = term == Term::kSquaredDeviation ? x[j] - m : x[j];
      s += term == Term::kValue ? d : d * d;
    }
    return s;
  }
  static ORCA_AVX2 void Scale(const float* x, float m, float inv, const float* w, const float* b,
                              int64_t n, float* out) {
    const __m256 vm = _mm256_set1_ps(m), vinv = _mm256_set1_ps(inv);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
      const __m256 c = _mm256_sub_ps(_mm256_loadu_ps(x + j), vm);
      __m256 y = _mm256_mul_ps(_mm256_mul_ps(c, vinv), _mm256_loadu_ps(w + j));
      if (b != nullptr) y = _mm256_add_ps(y, _mm256_loadu_ps(b + j));
      _mm256_storeu_ps(out + j, y);
    }
    Scalar::Scale(x + j, m, inv, w + j, b != nullptr ? b + j : nullptr, n - j, out + j);
  }
};

ORCA_AVX512 inline __mmask16 Lanes16(int64_t left) {
  return FirstLanes(static_cast<int>(std::min<int64_t>(16, left)));
}

// Sixteen floats a step (the last through a mask) as two float64 halves into two
// partial sums; lanes past n contribute zero.
struct Avx512 {
  static ORCA_AVX512 void Add(float* x, const float* delta, int64_t n) {
    for (int64_t j = 0; j < n; j += 16) {
      const __mmask16 m = Lanes16(n - j);
      _mm512_mask_storeu_ps(
          x + j, m,
          _mm512_add_ps(_mm512_maskz_loadu_ps(m, x + j), _mm512_maskz_loadu_ps(m, delta + j)));
    }
  }
  template <Term term>
  static ORCA_AVX512 double Fold(const float* x, int64_t n, double m = 0) {
    const __m512d vm = _mm512_set1_pd(m);
    __m512d a0 = _mm512_setzero_pd(), a1 = a0;
    for (int64_t j = 0; j < n; j += 16) {
      const __mmask16 k = Lanes16(n - j);
      const __m512 v = _mm512_maskz_loadu_ps(k, x + j);
      a0 = Add8(a0, _mm512_cvtps_pd(_mm512_castps512_ps256(v)), vm, static_cast<__mmask8>(k), term);
      a1 = Add8(a1, _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)), vm,
                static_cast<__mmask8>(k >> 8), term);
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(a0, a1));
  }
  static ORCA_AVX512 void Scale(const float* x, float m, float inv, const float* w, const float* b,
                                int64_t n, float* out) {
    const __m512 vm = _mm512_set1_ps(m), vinv = _mm512_set1_ps(inv);
    for (int64_t j = 0; j < n; j += 16) {
      const __mmask16 k = Lanes16(n - j);
      const __m512 c = _mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + j), vm);
      __m512 y = _mm512_mul_ps(_mm512_mul_ps(c, vinv), _mm512_maskz_loadu_ps(k, w + j));
      if (b != nullptr) y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(k, b + j));
      _mm512_mask_storeu_ps(out + j, k, y);
    }
  }
};

template <typename K>
void NormRowWith(float* x, const float* delta, const float* w, const float* bias, float eps,
                 int64_t n, float* out) {
  if (delta != nullptr) K::Add(x, delta, n);
  const double dn = static_cast<double>(n);
  if (bias == nullptr) {
    const double squares = K::template Fold<Term::kSquare>(x, n);
    const float inv = static_cast<float>(1.0 / std::sqrt(squares / dn + eps));
    return K::Scale(x, 0.0f, inv, w, nullptr, n, out);
  }
  const double mean = K::template Fold<Term::kValue>(x, n) / dn;
  const double var = K::template Fold<Term::kSquaredDeviation>(x, n, mean) / dn;
  const float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
  K::Scale(x, static_cast<float>(mean), inv, w, bias, n, out);
}

void RopeScalar(float* row, int num_heads, int head_dim, const float* cos_sin) {
  const int half = head_dim / 2;
  const float* sin_v = cos_sin + half;
  for (int h = 0; h < num_heads; ++h) {
    float* v = row + int64_t{h} * head_dim;
    for (int i = 0; i < half; ++i) {
      const float a = v[i], b = v[i + half];
      v[i] = a * cos_sin[i] - b * sin_v[i];
      v[i + half] = b * cos_sin[i] + a * sin_v[i];
    }
  }
}

ORCA_AVX2 void RopeAvx2(float* row, int num_heads, int head_dim, const float* cos_sin) {
  const int half = head_dim / 2, full = half & ~7;
  const float* sin_v = cos_sin + half;
  for (int h = 0; h < num_heads; ++h) {
    float* v = row + int64_t{h} * head_dim;
    for (int i = 0; i < full; i += 8) {
      const __m256 a = _mm256_loadu_ps(v + i), b = _mm256_loadu_ps(v + half + i);
      const __m256 c = _mm256_loadu_ps(cos_sin + i), s = _mm256_loadu_ps(sin_v + i);
      _mm256_storeu_ps(v + i, _mm256_fmsub_ps(a, c, _mm256_mul_ps(b, s)));
      _mm256_storeu_ps(v + half + i, _mm256_fmadd_ps(b, c, _mm256_mul_ps(a, s)));
    }
    for (int i = full; i < half; ++i) {
      const float a = v[i], b = v[i + half];
      v[i] = a * cos_sin[i] - b * sin_v[i];
      v[i + half] = b * cos_sin[i] + a * sin_v[i];
    }
  }
}

ORCA_AVX512 void RopeAvx512(float* row, int num_heads, int head_dim, const float* cos_sin) {
  const int half = head_dim / 2;
  const float* sin_v = cos_sin + half;
  for (int h = 0; h < num_heads; ++h) {
    float* v = row + int64_t{h} * head_dim;
    for (int i = 0; i < half; i += 16) {
      const __mmask16 k = FirstLanes(std::min(16, half - i));
      const __m512 a = _mm512_maskz_loadu_ps(k, v + i), b = _mm512_maskz_loadu_ps(k, v + half + i);
      const __m512 c = _mm512_maskz_loadu_ps(k, cos_sin + i),
                   s = _mm512_maskz_loadu_ps(k, sin_v + i);
      _mm512_mask_storeu_ps(v + i, k, _mm512_fmsub_ps(a, c, _mm512_mul_ps(b, s)));
      _mm512_mask_storeu_ps(v + half + i, k, _mm512_fmadd_ps(b, c, _mm512_mul_ps(a, s)));
    }
  }
}

}  // namespace

void NormRow(float* x, const float* delta, const float* w, const float* bias, float eps, int64_t n,
             float* out, SimdLevel level) {
  switch (std::min(level, CpuMaxSimdLevel())) {
    case SimdLevel::kAvx512:
      return NormRowWith<Avx512>(x, delta, w, bias, eps, n, out);
    case SimdLevel::kAvx2:
      return NormRowWith<Avx2>(x, delta, w, bias, eps, n, out);
    case SimdLevel::kScalar:
      return NormRowWith<Scalar>(x, delta, w, bias, eps, n, out);
  }
}

void RopeRow(float* row, int num_heads, int head_dim, const float* cos_sin, SimdLevel level) {
  switch (std::min(level, CpuMaxSimdLevel())) {
    case SimdLevel::kAvx512:
      return RopeAvx512(row, num_heads, head_dim, cos_sin);
    case SimdLevel::kAvx2:
      return RopeAvx2(row, num_heads, head_dim, cos_sin);
    case SimdLevel::kScalar:
      return RopeScalar(row, num_heads, head_dim, cos_sin);
  }
}

}  // namespace orca
