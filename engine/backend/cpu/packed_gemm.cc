// GCC 12 reports the AVX-512 intrinsics' own _mm512_undefined_* inputs as "may be used
// uninitialized" once they are inlined (false positives; GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "engine/backend/cpu/packed_gemm.h"

#include "engine/backend/cpu/packed_tile.h"

#include <immintrin.h>

#include <algorithm>
#include <type_traits>
#include <vector>

namespace orca {
namespace {

using packed_internal::ChunkedTiles;
using packed_internal::kAvx2MaxRows;
using packed_internal::kAvx512MaxRows;
using packed_internal::OwnStream;
using packed_internal::PackedRows;
using packed_internal::PrefetchAhead;
using packed_internal::TilePrefetch;
using packed_internal::TileSums;
using packed_internal::TileSumsAvx2;

// One tile: rows [0, R) of x against the 32 columns of a panel pair (w: the first
// panel's block start; the second panel is pstride elements on), over kc input columns.
// W: float, or Fp16 (widened in registers, exactly). Starts from out's values with
// `accumulate` (a later k block), else from zero; adds `bias` (null but on the last
// block) and stores the first `cols` (1..32) columns.
template <int R, typename W>
ORCA_AVX512 void TileAvx512(int kc, const float* x, int64_t ldx, const W* w, int64_t pstride,
                            float* out, int64_t ldo, int cols, const float* bias, bool accumulate) {
  TileSums<R> t(out, ldo, cols, accumulate);
  const W* w1 = w + pstride;
  for (int c = 0; c < kc; ++c) {
    PrefetchAhead(w + c * kPanelRows);
    PrefetchAhead(w1 + c * kPanelRows);
    const __m512 v0 = Load16(w + c * kPanelRows);
    const __m512 v1 = Load16(w1 + c * kPanelRows);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 xb = _mm512_set1_ps(x[r * ldx + c]);
      t.a0[r] = _mm512_fmadd_ps(xb, v0, t.a0[r]);
      t.a1[r] = _mm512_fmadd_ps(xb, v1, t.a1[r]);
    }
  }
  t.Store(bias, out, ldo);
}

// As TileAvx512 with 8 lanes, over one panel (16 columns, `cols` of them stored) and up
// to 6 rows: 12 accumulators, two weight vectors and a broadcast in the 16 registers.
// Prefetches where `pf` says (ChunkedTiles).
template <int R, typename W>
ORCA_AVX2 void TileAvx2(int kc, const float* x, int64_t ldx, const W* w, float* out, int64_t ldo,
                        int cols, const float* bias, bool accumulate, TilePrefetch pf) {
  TileSumsAvx2<R> t(out, ldo, cols, accumulate);
  for (int c = 0; c < kc; ++c) {
    pf.At(c);
    const __m256 v0 = Load8(w + c * kPanelRows);
    const __m256 v1 = Load8(w + c * kPanelRows + 8);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 xb = _mm256_broadcast_ss(x + r * ldx + c);
      t.a0[r] = _mm256_fmadd_ps(xb, v0, t.a0[r]);
      t.a1[r] = _mm256_fmadd_ps(xb, v1, t.a1[r]);
    }
  }
  t.Store(bias, out, ldo);
}

// The portable tile: `rows` rows against one panel's first `cols` columns.
template <typename W>
void TileScalar(int rows, int kc, const float* x, int64_t ldx, const W* w, float* out, int64_t ldo,
                int cols, const float* bias, bool accumulate) {
  for (int r = 0; r < rows; ++r) {
    for (int l = 0; l < cols; ++l) {
      float acc = accumulate ? out[r * ldo + l] : 0.0f;
      for (int c = 0; c < kc; ++c) acc += x[r * ldx + c] * ToF32(w[c * kPanelRows + l]);
      out[r * ldo + l] = bias != nullptr ? acc + bias[l] : acc;
    }
  }
}

template <typename W>
using Avx512Tile = void (*)(int, const float*, int64_t, const W*, int64_t, float*, int64_t, int,
                            const float*, bool);
template <typename W>
using Avx2Tile = void (*)(int, const float*, int64_t, const W*, float*, int64_t, int, const float*,
                          bool, TilePrefetch);

// From these rows on, a float16 panel pair's block is widened once for all its tiles;
// below, each tile widens its loads in registers, overlapped with the weights' stream
// (orca-bench-small-gemm BM_PackedGemmF16 on an Emerald Rapids Xeon: at 16-32 rows the
// tiles' own widening is 1.1-1.4x faster, from 64 rows the block's 1.1-1.3x).
constexpr int kF16WidenMinRows = 64;

template <typename W>
Avx512Tile<W> Avx512TileFor(int rows) {
  static const Avx512Tile<W> table[] = {nullptr,          TileAvx512<1, W>, TileAvx512<2, W>,
                                        TileAvx512<3, W>, TileAvx512<4, W>, TileAvx512<5, W>,
                                        TileAvx512<6, W>, TileAvx512<7, W>, TileAvx512<8, W>};
  return table[rows];
}

template <typename W>
Avx2Tile<W> Avx2TileFor(int rows) {
  static const Avx2Tile<W> table[] = {nullptr,        TileAvx2<1, W>, TileAvx2<2, W>,
                                      TileAvx2<3, W>, TileAvx2<4, W>, TileAvx2<5, W>,
                                      TileAvx2<6, W>};
  return table[rows];
}

// Every row of x (xs: at the block's first column) against one panel pair's block of kc
// input columns (ws: the first panel's block start, the second pstride elements on),
// `cols` of its columns stored to o. `cold`: the task's first block (ChunkedTiles).
template <typename W>
void TilesOverBlock(SimdLevel level, int m, int kc, const float* xs, int64_t ldx, const W* ws,
                    int64_t pstride, int cols, const float* b, float* o, int64_t ldo,
                    bool accumulate, bool cold) {
  if (level == SimdLevel::kAvx512) {
    for (int r = 0; r < m; r += kAvx512MaxRows) {
      const int rows = std::min(kAvx512MaxRows, m - r);
      Avx512TileFor<W>(rows)(kc, xs + r * ldx, ldx, ws, pstride, o + r * ldo, ldo, cols, b,
                             accumulate);
    }
    return;
  }
  for (int half = 0; half < 2 && cols > half * kPanelRows; ++half) {
    const int hc = std::min(kPanelRows, cols - half * kPanelRows);
    const W* wh = ws + half * pstride;
    float* oh = o + half * kPanelRows;
    const float* bh = b != nullptr ? b + half * kPanelRows : nullptr;
    if (level != SimdLevel::kAvx2) {
      TileScalar(m, kc, xs, ldx, wh, oh, ldo, hc, bh, accumulate);
      continue;
    }
    const auto tile = [&](int c, int ck, int r, int rows, TilePrefetch pf) {
      Avx2TileFor<W>(rows)(ck, xs + r * ldx + c, ldx, wh + int64_t{c} * kPanelRows, oh + r * ldo,
                           ldo, hc, c + ck >= kc ? bh : nullptr, accumulate || c > 0, pf);
    };
    if constexpr (!std::is_same_v<W, float>) {
      // float16 panels: half the bytes to stream, and the chunks' walk gained nothing
      // (docs/benchmarks.md section 25): each tile over the whole block.
      for (int r = 0; r < m; r += kAvx2MaxRows) {
        tile(0, kc, r, std::min(kAvx2MaxRows, m - r),
             OwnStream(wh, kPanelRows * sizeof(W), packed_internal::kTilePrefetchBytes));
      }
    } else {
      // Where the walk reads next: the pair's second panel, else the next block's first.
      const W* after =
          half == 0 && cols > kPanelRows ? ws + pstride : ws + int64_t{kc} * kPanelRows;
      ChunkedTiles(m, kAvx2MaxRows, kc, wh, kPanelRows * sizeof(W), after, cold && half == 0, tile);
    }
  }
}

// Every row of x against one panel pair's columns [j0, j0 + cols) over input columns
// [c0, c0 + kc) (panel: the pair's first panel at column 0). For kF16WidenMinRows rows
// or more, float16 panels are widened block by block into float32 first (once, instead
// of once per tile; the same products in the same order either way).
// packed_k: the input columns the weight was packed with (its panels' stride), k or more.
template <typename W>
void PanelPairBlock(SimdLevel level, int m, int k, int64_t packed_k, int c0, int kc, const float* x,
                    int64_t ldx, const W* panel, int64_t j0, int cols, const float* bias,
                    float* out, int64_t ldo) {
  const int64_t pstride = packed_k * kPanelRows;
  const bool accumulate = c0 > 0;
  const float* b = c0 + kc >= k && bias != nullptr ? bias + j0 : nullptr;
  const float* xs = x + c0;
  const W* ws = panel + int64_t{c0} * kPanelRows;
  float* o = out + j0;
  if constexpr (!std::is_same_v<W, float>) {
    if (m >= kF16WidenMinRows) {
      // 64-byte aligned, as the packed weights are: the tiles' 64-byte loads from a
      // vector's own 16-byte alignment would each span two cache lines (7 % of a
      // prefill's time).
      const int64_t block = int64_t{kc} * kPanelRows;
      thread_local std::vector<float> scratch;
      scratch.resize(static_cast<size_t>(2 * block + 16));
      const uintptr_t misaligned = reinterpret_cast<uintptr_t>(scratch.data()) % 64;
      float* widened = scratch.data() + (misaligned ? (64 - misaligned) / sizeof(float) : 0);
      WidenToF32(ws, block, widened, level);
      WidenToF32(ws + pstride, block, widened + block, level);
      TilesOverBlock(level, m, kc, xs, ldx, static_cast<const float*>(widened), block, cols, b, o,
                     ldo, accumulate, c0 == 0);
      return;
    }
  }
  TilesOverBlock(level, m, kc, xs, ldx, ws, pstride, cols, b, o, ldo, accumulate, c0 == 0);
}

template <typename W>
void PackPanels(const W* w, int64_t n, int64_t k, W* packed, W zero) {
  const int64_t panels = PackedRows(n) / kPanelRows;
  for (int64_t p = 0; p < panels; ++p) {
    W* dst = packed + p * k * kPanelRows;
    for (int64_t l = 0; l < kPanelRows; ++l) {
      const int64_t j = p * kPanelRows + l;
      for (int64_t c = 0; c < k; ++c) dst[c * kPanelRows + l] = j < n ? w[j * k + c] : zero;
    }
  }
}

}  // namespace

int64_t PackedWeightFloats(int64_t n, int64_t k) { return PackedRows(n) * k; }

void PackWeights(const float* w, int64_t n, int64_t k, float* packed) {
  PackPanels(w, n, k, packed, 0.0f);
}

void PackWeightsF16(const uint16_t* w, int64_t n, int64_t k, uint16_t* packed) {
  PackPanels(w, n, k, packed, uint16_t{0});
}

void UnpackWeightRow(const float* packed, int64_t k, int64_t j, float* dst) {
  const float* src = packed + (j / kPanelRows) * k * kPanelRows + j % kPanelRows;
  for (int64_t c = 0; c < k; ++c) dst[c] = src[c * kPanelRows];
}

void UnpackWeightRowF16(const uint16_t* packed, int64_t k, int64_t j, float* dst) {
  const uint16_t* src = packed + (j / kPanelRows) * k * kPanelRows + j % kPanelRows;
  for (int64_t c = 0; c < k; ++c) dst[c] = F16ToF32(src[c * kPanelRows]);
}

namespace {

// dst (16 rows, row stride k) = one panel of a [*, k] packed weight, k a multiple of 8.
template <typename T>
ORCA_AVX2 void UnpackPanelAvx2(const T* panel, int64_t k, float* dst) {
  for (int64_t c = 0; c < k; c += 8) {
    for (int half = 0; half < kPanelRows; half += 8) {
      __m256 r[8];
      for (int i = 0; i < 8; ++i) r[i] = Load8(panel + (c + i) * kPanelRows + half);
      Transpose8x8(r);
      for (int i = 0; i < 8; ++i) _mm256_storeu_ps(dst + (half + i) * k + c, r[i]);
    }
  }
}

// Rows [first, first + count): whole panels on AVX2, the rest through `row`.
template <typename T, typename RowFn>
void UnpackRows(const T* packed, int64_t k, int64_t first, int64_t count, float* dst, RowFn row) {
  const bool panels = k % 8 == 0 && CpuSimdLevel() >= SimdLevel::kAvx2;
  for (int64_t j = 0; j < count;) {
    if (panels && (first + j) % kPanelRows == 0 && count - j >= kPanelRows) {
      UnpackPanelAvx2(packed + (first + j) * k, k, dst + j * k);
      j += kPanelRows;
    } else {
      row(first + j, dst + j * k);
      ++j;
    }
  }
}

}  // namespace

void UnpackWeightRows(const float* packed, int64_t k, int64_t first, int64_t count, float* dst) {
  UnpackRows(packed, k, first, count, dst,
             [&](int64_t j, float* out) { UnpackWeightRow(packed, k, j, out); });
}

void UnpackWeightRowsF16(const uint16_t* packed, int64_t k, int64_t first, int64_t count,
                         float* dst) {
  UnpackRows(reinterpret_cast<const Fp16*>(packed), k, first, count, dst,
             [&](int64_t j, float* out) { UnpackWeightRowF16(packed, k, j, out); });
}

void PackedGemm(int m, int n, int k, const float* x, int64_t ldx, const float* packed,
                const float* bias, float* out, int64_t ldo, const ParallelForFn& parallel_for,
                SimdLevel level) {
  if (m <= 0 || n <= 0) return;
  level = std::min(level, CpuMaxSimdLevel());
  packed_internal::ForEachPanelPairBlock(
      n, k, parallel_for, [&](int64_t j0, int cols, int c0, int kc) {
        PanelPairBlock(level, m, k, k, c0, kc, x, ldx, packed + j0 * k, j0, cols, bias, out, ldo);
      });
}

void PackedGemmPrefix(int m, int n, int k, int64_t packed_k, const float* x, int64_t ldx,
                      const float* packed, float* out, int64_t ldo,
                      const ParallelForFn& parallel_for, SimdLevel level) {
  if (m <= 0 || n <= 0 || k <= 0) return;
  level = std::min(level, CpuMaxSimdLevel());
  packed_internal::ForEachPanelPairBlock(
      n, k, parallel_for, [&](int64_t j0, int cols, int c0, int kc) {
        PanelPairBlock(level, m, k, packed_k, c0, kc, x, ldx, packed + j0 * packed_k, j0, cols,
                       nullptr, out, ldo);
      });
}

void PackedGemmF16(int m, int n, int k, const float* x, int64_t ldx, const uint16_t* packed,
                   const float* bias, float* out, int64_t ldo, const ParallelForFn& parallel_for,
                   SimdLevel level) {
  if (m <= 0 || n <= 0) return;
  level = std::min(level, CpuMaxSimdLevel());
  const Fp16* panels = reinterpret_cast<const Fp16*>(packed);
  packed_internal::ForEachPanelPairBlock(
      n, k, parallel_for, [&](int64_t j0, int cols, int c0, int kc) {
        PanelPairBlock(level, m, k, k, c0, kc, x, ldx, panels + j0 * k, j0, cols, bias, out, ldo);
      });
}

}  // namespace orca
