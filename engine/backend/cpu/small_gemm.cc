// GCC 12 reports the AVX-512 intrinsics' own _mm512_undefined_* inputs as "may be used
// uninitialized" once they are inlined (false positives; GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "engine/backend/cpu/small_gemm.h"

#include <immintrin.h>

#include <algorithm>

namespace orca {
namespace {

constexpr int64_t kRowsPerTask = 32;

// Portable version: plain loops over one block of weight rows.
template <typename W>
void BlockScalar(int m, int k, const float* x, int64_t ldx, const W* w, int64_t n0, int64_t n1,
                 const float* bias, float* out, int64_t ldo) {
  for (int64_t j = n0; j < n1; ++j) {
    const W* wr = w + j * k;
    for (int r = 0; r < m; ++r) {
      const float* xr = x + r * ldx;
      float acc = 0;
      for (int c = 0; c < k; ++c) acc += xr[c] * ToF32(wr[c]);
      out[r * ldo + j] = acc + (bias ? bias[j] : 0.0f);
    }
  }
}

// Elements of W in one 64-byte cache line.
template <typename W>
constexpr int kPerLine = 64 / static_cast<int>(sizeof(W));

// AVX2 version: R rows of x against two weight rows at a time, with 2R accumulators
// in registers (R is a template parameter so they stay in registers): each 8-wide chunk
// costs R + 2 loads for 2R FMAs. The next two weight rows (p0, p1) are prefetched while
// these are computed: rows of a few KB are too short for the hardware prefetcher to
// ramp up, and without it a 2-4 row product streamed the weights at half the speed of
// OpenBLAS's sgemv (14 against 25 GB/s on one core of the development machine).
template <int R, typename W>
__attribute__((target("avx2,fma,f16c"))) inline void RowsAvx2(int k, const float* x, int64_t ldx,
                                                              const W* w0, const W* w1, const W* p0,
                                                              const W* p1, float* out0, float* out1,
                                                              int64_t ldo) {
  const int k8 = k & ~7;
  __m256 a0[R], a1[R];
  for (int r = 0; r < R; ++r) a0[r] = a1[r] = _mm256_setzero_ps();
  for (int c = 0; c < k8; c += 8) {
    if (c % kPerLine<W> == 0) {  // one line of each next row per line of these
      _mm_prefetch(reinterpret_cast<const char*>(p0 + c), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(p1 + c), _MM_HINT_T0);
    }
    const __m256 v0 = Load8(w0 + c);
    const __m256 v1 = Load8(w1 + c);
    for (int r = 0; r < R; ++r) {
      const __m256 xv = _mm256_loadu_ps(x + r * ldx + c);
      a0[r] = _mm256_fmadd_ps(xv, v0, a0[r]);
      a1[r] = _mm256_fmadd_ps(xv, v1, a1[r]);
    }
  }
  for (int r = 0; r < R; ++r) {
    float s0 = Sum8(a0[r]), s1 = Sum8(a1[r]);
    const float* xr = x + r * ldx;
    for (int c = k8; c < k; ++c) {
      s0 += xr[c] * ToF32(w0[c]);
      s1 += xr[c] * ToF32(w1[c]);
    }
    out0[r * ldo] = s0;
    out1[r * ldo] = s1;
  }
}

// AVX-512 version: as RowsAvx2 with 16 lanes and up to 8 rows of x (16 accumulators of
// the 32 registers); the last partial chunk uses masked loads.
template <int R, typename W>
ORCA_AVX512 inline void RowsAvx512(int k, const float* x, int64_t ldx, const W* w0, const W* w1,
                                   const W* p0, const W* p1, float* out0, float* out1,
                                   int64_t ldo) {
  const int k16 = k & ~15;
  __m512 a0[R], a1[R];
  for (int r = 0; r < R; ++r) a0[r] = a1[r] = _mm512_setzero_ps();
  for (int c = 0; c < k16; c += 16) {
    if (c % kPerLine<W> == 0) {
      _mm_prefetch(reinterpret_cast<const char*>(p0 + c), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(p1 + c), _MM_HINT_T0);
    }
    const __m512 v0 = Load16(w0 + c);
    const __m512 v1 = Load16(w1 + c);
    for (int r = 0; r < R; ++r) {
      const __m512 xv = _mm512_loadu_ps(x + r * ldx + c);
      a0[r] = _mm512_fmadd_ps(xv, v0, a0[r]);
      a1[r] = _mm512_fmadd_ps(xv, v1, a1[r]);
    }
  }
  if (k16 < k) {
    const __mmask16 mask = static_cast<__mmask16>((1u << (k - k16)) - 1);
    const __m512 v0 = LoadPart16(w0 + k16, mask);
    const __m512 v1 = LoadPart16(w1 + k16, mask);
    for (int r = 0; r < R; ++r) {
      const __m512 xv = _mm512_maskz_loadu_ps(mask, x + r * ldx + k16);
      a0[r] = _mm512_fmadd_ps(xv, v0, a0[r]);
      a1[r] = _mm512_fmadd_ps(xv, v1, a1[r]);
    }
  }
  for (int r = 0; r < R; ++r) {
    out0[r * ldo] = _mm512_reduce_add_ps(a0[r]);
    out1[r * ldo] = _mm512_reduce_add_ps(a1[r]);
  }
}

// One pass of R rows of x over two weight rows; tables by R per path.
template <typename W>
using RowsFn = void (*)(int, const float*, int64_t, const W*, const W*, const W*, const W*, float*,
                        float*, int64_t);

template <typename W>
struct Avx2Rows {
  static constexpr int kMaxR = 4;
  static RowsFn<W> For(int r) {
    static const RowsFn<W> table[] = {nullptr, RowsAvx2<1, W>, RowsAvx2<2, W>, RowsAvx2<3, W>,
                                      RowsAvx2<4, W>};
    return table[r];
  }
};

template <typename W>
struct Avx512Rows {
  static constexpr int kMaxR = 8;
  static RowsFn<W> For(int r) {
    static const RowsFn<W> table[] = {nullptr,          RowsAvx512<1, W>, RowsAvx512<2, W>,
                                      RowsAvx512<3, W>, RowsAvx512<4, W>, RowsAvx512<5, W>,
                                      RowsAvx512<6, W>, RowsAvx512<7, W>, RowsAvx512<8, W>};
    return table[r];
  }
};

// Weight rows [n0, n1) two at a time, each pair against every row of x in passes of
// up to Rows::kMaxR.
template <typename Rows, typename W>
void BlockVector(int m, int k, const float* x, int64_t ldx, const W* w, int64_t n0, int64_t n1,
                 const float* bias, float* out, int64_t ldo) {
  for (int64_t j = n0; j < n1; j += 2) {
    const int64_t j1 = j + 1 < n1 ? j + 1 : j;  // an odd tail computes its last row twice
    const W* w0 = w + j * k;
    const W* w1 = w + j1 * k;
    // The rows after these in this block (at its end: these again, a no-op).
    const W* p0 = j + 2 < n1 ? w0 + 2 * k : w0;
    const W* p1 = j1 + 2 < n1 ? w1 + 2 * k : w1;
    for (int r = 0; r < m; r += Rows::kMaxR) {
      const int rows = std::min(Rows::kMaxR, m - r);
      Rows::For(rows)(k, x + r * ldx, ldx, w0, w1, p0, p1, out + r * ldo + j, out + r * ldo + j1,
                      ldo);
    }
    if (bias != nullptr) {
      for (int rr = 0; rr < m; ++rr) {
        out[rr * ldo + j] += bias[j];
        if (j1 != j) out[rr * ldo + j1] += bias[j1];
      }
    }
  }
}

template <typename W>
__attribute__((target("avx2,fma,f16c"))) void WidenAvx2(const W* src, int64_t n, float* dst) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, Load8(src + i));
  for (; i < n; ++i) dst[i] = ToF32(src[i]);
}

template <typename W>
ORCA_AVX512 void WidenAvx512(const W* src, int64_t n, float* dst) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, Load16(src + i));
  for (; i < n; ++i) dst[i] = ToF32(src[i]);
}

}  // namespace

template <typename W>
void WidenToF32(const W* src, int64_t n, float* dst, SimdLevel level) {
  switch (std::min(level, CpuMaxSimdLevel())) {
    case SimdLevel::kAvx512:
      return WidenAvx512(src, n, dst);
    case SimdLevel::kAvx2:
      return WidenAvx2(src, n, dst);
    case SimdLevel::kScalar:
      for (int64_t i = 0; i < n; ++i) dst[i] = ToF32(src[i]);
  }
}

template void WidenToF32<Fp16>(const Fp16*, int64_t, float*, SimdLevel);
template void WidenToF32<Bf16>(const Bf16*, int64_t, float*, SimdLevel);

template <typename W>
void SmallGemm(int m, int n, int k, const float* x, int64_t ldx, const W* w, const float* bias,
               float* out, int64_t ldo, const ParallelForFn& parallel_for, SimdLevel level) {
  const int64_t tasks = (n + kRowsPerTask - 1) / kRowsPerTask;
  level = std::min(level, CpuMaxSimdLevel());
  parallel_for(tasks, [&](int64_t t) {
    const int64_t n0 = t * kRowsPerTask, n1 = std::min<int64_t>(n, n0 + kRowsPerTask);
    switch (level) {
      case SimdLevel::kAvx512:
        BlockVector<Avx512Rows<W>>(m, k, x, ldx, w, n0, n1, bias, out, ldo);
        break;
      case SimdLevel::kAvx2:
        BlockVector<Avx2Rows<W>>(m, k, x, ldx, w, n0, n1, bias, out, ldo);
        break;
      case SimdLevel::kScalar:
        BlockScalar(m, k, x, ldx, w, n0, n1, bias, out, ldo);
        break;
    }
  });
}

template void SmallGemm<float>(int, int, int, const float*, int64_t, const float*, const float*,
                               float*, int64_t, const ParallelForFn&, SimdLevel);
template void SmallGemm<Fp16>(int, int, int, const float*, int64_t, const Fp16*, const float*,
                              float*, int64_t, const ParallelForFn&, SimdLevel);
template void SmallGemm<Bf16>(int, int, int, const float*, int64_t, const Bf16*, const float*,
                              float*, int64_t, const ParallelForFn&, SimdLevel);

}  // namespace orca
