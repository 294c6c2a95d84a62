// GCC 12 reports the AVX-512 intrinsics' own _mm512_undefined_* inputs as "may be used
// uninitialized" once they are inlined (false positives; GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "engine/backend/cpu/packed_gemm_bf16.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "engine/backend/cpu/packed_gemm_amx.h"
#include "engine/backend/cpu/packed_tile.h"
#include "engine/common/dtype.h"

namespace orca {
namespace {

using packed_internal::AmxPairs;
using packed_internal::AmxPanelPairBlock;
using packed_internal::AmxPanelPairBlockInScope;
using packed_internal::AmxRows;
using packed_internal::AmxTileScope;
using packed_internal::kAvx512MaxRows;
using packed_internal::kPanelPair;
using packed_internal::PackedRows;
using packed_internal::PrefetchAhead;
using packed_internal::TileSums;
using packed_internal::TileSumsAvx2;

// Elements of one packed input-column pair of a panel: 16 rows x 2 columns.
constexpr int kPairElements = 2 * kPanelRows;

int64_t Pairs(int64_t k) { return (k + 1) / 2; }

// One tile with bfloat16 products: rows [0, R) of x, rounded to bfloat16 (xr: row
// stride 2 * ldxp elements, an odd k's last pair ending in a zero) and broadcast a
// column pair at a time, against the 32 columns of a panel pair (w: the first panel's block start;
// the second is pstride elements on), over kp pairs. As TileAvx512 in packed_gemm.cc, each
// vdpbf16ps adding two products to each of 16 columns.
template <int R>
ORCA_AVX512_BF16 void TileDot(int kp, const uint16_t* xr, int64_t ldxp, const uint16_t* w,
                              int64_t pstride, float* out, int64_t ldo, int cols, const float* bias,
                              bool accumulate) {
  TileSums<R> t(out, ldo, cols, accumulate);
  const uint16_t* w1 = w + pstride;
  for (int p = 0; p < kp; ++p) {
    PrefetchAhead(w + p * kPairElements);
    PrefetchAhead(w1 + p * kPairElements);
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w + p * kPairElements);
    const __m512bh v1 = (__m512bh)_mm512_loadu_si512(w1 + p * kPairElements);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512bh xb =
          (__m512bh)_mm512_broadcastd_epi32(_mm_loadu_si32(xr + 2 * (r * ldxp + p)));
      t.a0[r] = _mm512_dpbf16_ps(t.a0[r], v0, xb);
      t.a1[r] = _mm512_dpbf16_ps(t.a1[r], v1, xb);
    }
  }
  t.Store(bias, out, ldo);
}

// One tile in float32 arithmetic: x as it is against the same 32 columns over kc input
// columns, each pair of weights widened in registers (the even column by a shift, the
// odd one by a mask) and multiplied in column order.
template <int R>
ORCA_AVX512 void TileWiden(int kc, const float* x, int64_t ldx, const uint16_t* w, int64_t pstride,
                           float* out, int64_t ldo, int cols, const float* bias, bool accumulate) {
  TileSums<R> t(out, ldo, cols, accumulate);
  const uint16_t* w1 = w + pstride;
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  int c = 0;
  for (; c + 2 <= kc; c += 2) {
    PrefetchAhead(w + c / 2 * kPairElements);
    PrefetchAhead(w1 + c / 2 * kPairElements);
    const __m512i raw0 = _mm512_loadu_si512(w + c / 2 * kPairElements);
    const __m512i raw1 = _mm512_loadu_si512(w1 + c / 2 * kPairElements);
    const __m512 e0 = _mm512_castsi512_ps(_mm512_slli_epi32(raw0, 16));
    const __m512 e1 = _mm512_castsi512_ps(_mm512_slli_epi32(raw1, 16));
    const __m512 o0 = _mm512_castsi512_ps(_mm512_and_si512(raw0, high));
    const __m512 o1 = _mm512_castsi512_ps(_mm512_and_si512(raw1, high));
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 xe = _mm512_set1_ps(x[r * ldx + c]);
      const __m512 xo = _mm512_set1_ps(x[r * ldx + c + 1]);
      t.a0[r] = _mm512_fmadd_ps(xo, o0, _mm512_fmadd_ps(xe, e0, t.a0[r]));
      t.a1[r] = _mm512_fmadd_ps(xo, o1, _mm512_fmadd_ps(xe, e1, t.a1[r]));
    }
  }
  if (c < kc) {  // an odd k's last column: the pair's second half is padding (x has none)
    const __m512 e0 =
        _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_loadu_si512(w + c / 2 * kPairElements), 16));
    const __m512 e1 =
        _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_loadu_si512(w1 + c / 2 * kPairElements), 16));
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 xe = _mm512_set1_ps(x[r * ldx + c]);
      t.a0[r] = _mm512_fmadd_ps(xe, e0, t.a0[r]);
      t.a1[r] = _mm512_fmadd_ps(xe, e1, t.a1[r]);
    }
  }
  t.Store(bias, out, ldo);
}

// As TileWiden over one panel (16 columns, `cols` of them stored) with 8 lanes, for up
// to kBf16Avx2MaxRows rows: the 8 accumulators, a column pair's four widened weight
// vectors, two broadcasts and the mask fit the 16 registers (6 rows would spill).
constexpr int kBf16Avx2MaxRows = 4;

ORCA_AVX2 inline __m256i Load256(const uint16_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

template <int R>
ORCA_AVX2 void TileWidenAvx2(int kc, const float* x, int64_t ldx, const uint16_t* w, float* out,
                             int64_t ldo, int cols, const float* bias, bool accumulate) {
  TileSumsAvx2<R> t(out, ldo, cols, accumulate);
  const __m256i high = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  int c = 0;
  for (; c + 2 <= kc; c += 2) {
    const uint16_t* p = w + c / 2 * kPairElements;
    PrefetchAhead(p);
    const __m256i raw0 = Load256(p), raw1 = Load256(p + kPanelRows);
    const __m256 e0 = _mm256_castsi256_ps(_mm256_slli_epi32(raw0, 16));
    const __m256 e1 = _mm256_castsi256_ps(_mm256_slli_epi32(raw1, 16));
    const __m256 o0 = _mm256_castsi256_ps(_mm256_and_si256(raw0, high));
    const __m256 o1 = _mm256_castsi256_ps(_mm256_and_si256(raw1, high));
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m256 xe = _mm256_broadcast_ss(x + r * ldx + c);
      const __m256 xo = _mm256_broadcast_ss(x + r * ldx + c + 1);
      t.a0[r] = _mm256_fmadd_ps(xo, o0, _mm256_fmadd_ps(xe, e0, t.a0[r]));
      t.a1[r] = _mm256_fmadd_ps(xo, o1, _mm256_fmadd_ps(xe, e1, t.a1[r]));
    }
  }
  if (c < kc) {  // an odd k's last column: the pair's second half is padding (x has none)
    const uint16_t* p = w + c / 2 * kPairElements;
    const __m256 e0 = _mm256_castsi256_ps(_mm256_slli_epi32(Load256(p), 16));
    const __m256 e1 = _mm256_castsi256_ps(_mm256_slli_epi32(Load256(p + kPanelRows), 16));
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m256 xe = _mm256_broadcast_ss(x + r * ldx + c);
      t.a0[r] = _mm256_fmadd_ps(xe, e0, t.a0[r]);
      t.a1[r] = _mm256_fmadd_ps(xe, e1, t.a1[r]);
    }
  }
  t.Store(bias, out, ldo);
}

// The portable tile: `rows` rows of x as it is against one panel's first `cols` columns.
void TileScalar(int rows, int kc, const float* x, int64_t ldx, const uint16_t* w, float* out,
                int64_t ldo, int cols, const float* bias, bool accumulate) {
  for (int r = 0; r < rows; ++r) {
    for (int l = 0; l < cols; ++l) {
      float acc = accumulate ? out[r * ldo + l] : 0.0f;
      for (int c = 0; c < kc; ++c) {
        acc += x[r * ldx + c] * Bf16ToF32(w[c / 2 * kPairElements + 2 * l + c % 2]);
      }
      out[r * ldo + l] = bias != nullptr ? acc + bias[l] : acc;
    }
  }
}

using DotTile = void (*)(int, const uint16_t*, int64_t, const uint16_t*, int64_t, float*, int64_t,
                         int, const float*, bool);
using WidenTile = void (*)(int, const float*, int64_t, const uint16_t*, int64_t, float*, int64_t,
                           int, const float*, bool);

DotTile DotTileFor(int rows) {
  static const DotTile table[] = {nullptr,    TileDot<1>, TileDot<2>, TileDot<3>, TileDot<4>,
                                  TileDot<5>, TileDot<6>, TileDot<7>, TileDot<8>};
  return table[rows];
}

using WidenTileAvx2 = void (*)(int, const float*, int64_t, const uint16_t*, float*, int64_t, int,
                               const float*, bool);

WidenTileAvx2 WidenTileAvx2For(int rows) {
  static const WidenTileAvx2 table[] = {nullptr, TileWidenAvx2<1>, TileWidenAvx2<2>,
                                        TileWidenAvx2<3>, TileWidenAvx2<4>};
  return table[rows];
}

WidenTile WidenTileFor(int rows) {
  static const WidenTile table[] = {nullptr,      TileWiden<1>, TileWiden<2>,
                                    TileWiden<3>, TileWiden<4>, TileWiden<5>,
                                    TileWiden<6>, TileWiden<7>, TileWiden<8>};
  return table[rows];
}

// 64-byte-aligned elements, as the weights are (CpuBackend's buffers): a 64-byte load
// across two cache lines costs two (vdpbf16ps's broadcasts, AMX's rows of x).
template <typename T>
struct AlignedArray {
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T[], Free> data;

  AlignedArray() = default;
  explicit AlignedArray(size_t n)
      : data(static_cast<T*>(std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64))) {}
  AlignedArray(size_t n, T value) : AlignedArray(n) {
    std::fill(data.get(), data.get() + n, value);
  }
  T* get() const { return data.get(); }
};

// What one PackedGemmBf16 call multiplies: x as given, or rounded to bfloat16 pairs.
struct Operands {
  int m, k;
  const float* x;
  int64_t ldx;
  Bf16Products products;           // kDots, kAmx or kOff
  AlignedArray<uint16_t> rounded;  // with products: rows of rounded_pairs pairs (zero-padded)
  int64_t rounded_pairs;
  const uint16_t* packed;
  const float* bias;
  float* out;
  int64_t ldo;
  int rounded_first = 0, rounded_capacity = 0;  // x's row in rounded's first; rows allocated
};

// Rows [r0, r0 + rows) (r0 a multiple of 16) against one panel pair's columns [j0, j0 +
// cols) over input columns [c0, c0 + kc), on AMX tiles, inside an AmxTileScope.
void AmxBlock(const Operands& a, int r0, int rows, int64_t j0, int cols, int c0, int kc) {
  const int64_t kp = Pairs(a.k), ldxr = 2 * a.rounded_pairs;
  const float* b = c0 + kc >= a.k && a.bias != nullptr ? a.bias + j0 : nullptr;
  AmxPanelPairBlockInScope(rows, (kc + 1) / 2, a.rounded.get() + (r0 - a.rounded_first) * ldxr + c0,
                           ldxr, a.packed + j0 * 2 * kp + int64_t{c0} / 2 * kPairElements,
                           kp * kPairElements, a.out + r0 * a.ldo + j0, a.ldo, cols, b, c0 > 0);
}

// AMX GEMMs run as tasks of a chunk of rows (all of them in a decode) by
// kAmxPairsPerTask panel pairs. The chunks hold at most AmxChunkRows(k) rows, so that a
// chunk's rounded x (at most 1 MiB) stays in L2 while every panel pair goes past it:
// walking all of a prefill's rows past one panel pair at a time re-read x from L3 for
// each pair, which bounded the tiles by L3's bandwidth (a prefill of 16 x 512 tokens'
// GEMMs 1.6x faster in chunks, docs/benchmarks.md section 23). A task's panel pairs
// follow one another: with one pair a task (a few microseconds at 16 rows) the tasks'
// ends, where the pool's atomic counters wait for the tiles' stores, cost a quarter of
// a GEMM whose weights are in L3 (four pairs: 1.1-1.3x faster there).
int AmxChunkRows(int k) {
  const int rows = (1 << 20) / (2 * std::max(k, 1));
  return std::max(32, rows / 32 * 32);
}
constexpr int64_t kAmxPairsPerTask = 4;

// Every row against one panel pair's columns [j0, j0 + cols) over input columns
// [c0, c0 + kc) (c0 even: kPackedKBlock is).
void PanelPairBlock(SimdLevel level, const Operands& a, int64_t j0, int cols, int c0, int kc) {
  const int64_t kp = Pairs(a.k);
  const int64_t pstride = kp * kPairElements;
  const bool accumulate = c0 > 0;
  const float* b = c0 + kc >= a.k && a.bias != nullptr ? a.bias + j0 : nullptr;
  const uint16_t* ws = a.packed + j0 * 2 * kp + int64_t{c0} / 2 * kPairElements;
  float* o = a.out + j0;
  if (a.products == Bf16Products::kDots) {
    const uint16_t* xr = a.rounded.get() + c0;
    const int block_pairs = (kc + 1) / 2;
    for (int r = 0; r < a.m; r += kAvx512MaxRows) {
      const int rows = std::min(kAvx512MaxRows, a.m - r);
      DotTileFor(rows)(block_pairs, xr + r * 2 * a.rounded_pairs, a.rounded_pairs, ws, pstride,
                       o + r * a.ldo, a.ldo, cols, b, accumulate);
    }
    return;
  }
  const float* xs = a.x + c0;
  if (level == SimdLevel::kAvx512) {
    for (int r = 0; r < a.m; r += kAvx512MaxRows) {
      const int rows = std::min(kAvx512MaxRows, a.m - r);
      WidenTileFor(rows)(kc, xs + r * a.ldx, a.ldx, ws, pstride, o + r * a.ldo, a.ldo, cols, b,
                         accumulate);
    }
    return;
  }
  for (int half = 0; half < 2 && cols > half * kPanelRows; ++half) {
    const int hc = std::min(kPanelRows, cols - half * kPanelRows);
    const uint16_t* wh = ws + half * pstride;
    float* oh = o + half * kPanelRows;
    const float* bh = b != nullptr ? b + half * kPanelRows : nullptr;
    if (level != SimdLevel::kAvx2) {
      TileScalar(a.m, kc, xs, a.ldx, wh, oh, a.ldo, hc, bh, accumulate);
      continue;
    }
    for (int r = 0; r < a.m; r += kBf16Avx2MaxRows) {
      const int rows = std::min(kBf16Avx2MaxRows, a.m - r);
      WidenTileAvx2For(rows)(kc, xs + r * a.ldx, a.ldx, wh, oh + r * a.ldo, a.ldo, hc, bh,
                             accumulate);
    }
  }
}

// a.rounded = x's rows [first, first + count) rounded to bfloat16, a.rounded_pairs pairs
// a row (AMX: whole steps of 16 pairs, AmxRows(count) rows), zeros past k and past
// count; 16 rows a task. The buffer is allocated on the first call, for its rows.
void RoundRows(Operands& a, int first, int count, const ParallelForFn& parallel_for) {
  const bool amx = a.products == Bf16Products::kAmx;
  a.rounded_pairs = amx ? AmxPairs(Pairs(a.k)) : Pairs(a.k);
  const int64_t ldxr = 2 * a.rounded_pairs;
  const int rows = amx ? AmxRows(count) : count;
  if (rows > a.rounded_capacity) {
    a.rounded = AlignedArray<uint16_t>(static_cast<size_t>(rows * ldxr));
    a.rounded_capacity = rows;
  }
  a.rounded_first = first;
  const auto round = [&](int64_t task) {
    const int end = static_cast<int>(std::min<int64_t>(rows, 16 * task + 16));
    for (int r = static_cast<int>(16 * task); r < end; ++r) {
      uint16_t* dst = a.rounded.get() + r * ldxr;
      if (r < count) RoundToBf16(a.x + (first + r) * a.ldx, a.k, dst);
      std::fill(dst + (r < count ? a.k : 0), dst + ldxr, uint16_t{0});
    }
  };
  const int64_t tasks = (rows + 15) / 16;
  if (tasks >= 4) {
    parallel_for(tasks, round);
  } else {
    for (int64_t t = 0; t < tasks; ++t) round(t);
  }
}

// The GEMM on AMX tiles: tasks of a chunk of rows by kAmxPairsPerTask panel pairs.
// Each chunk's rows are rounded just before its tasks run, so the tiles read them from
// the caches the rounding wrote them to rather than after a round trip through memory.
void AmxGemm(Operands& a, int n, const ParallelForFn& parallel_for) {
  const int chunk = std::min(AmxChunkRows(a.k), AmxRows(a.m));
  const int64_t pairs = (n + kPanelPair - 1) / kPanelPair;
  const int64_t groups = (pairs + kAmxPairsPerTask - 1) / kAmxPairsPerTask;
  for (int r0 = 0; r0 < a.m; r0 += chunk) {
    const int rows = std::min(chunk, a.m - r0);
    RoundRows(a, r0, rows, parallel_for);
    parallel_for(groups, [&](int64_t group) {
      const AmxTileScope tiles;  // one configuration load for the task's blocks
      const int64_t q0 = group * kAmxPairsPerTask;
      for (int64_t q = q0; q < std::min(pairs, q0 + kAmxPairsPerTask); ++q) {
        const int64_t j0 = q * kPanelPair;
        const int cols = static_cast<int>(std::min<int64_t>(kPanelPair, n - j0));
        for (int c0 = 0; c0 < a.k; c0 += kPackedKBlock) {
          AmxBlock(a, r0, rows, j0, cols, c0, std::min(kPackedKBlock, a.k - c0));
        }
      }
    });
  }
}

}  // namespace

const Bf16DotsTiming& CpuBf16DotsTiming() {
  static const Bf16DotsTiming timing = [] {
    Bf16DotsTiming t;
    if (!CpuHasBf16Dots() || CpuMaxSimdLevel() != SimdLevel::kAvx512) return t;
    // One tile of 8 rows by a panel pair's 32 columns over 1024 input columns: 64 KiB
    // of weights and the rows' 16 (bfloat16) or 32 KiB (float32), in L2 from the first
    // run on, so the times are the tiles' arithmetic. Ones everywhere (sums stay exact).
    constexpr int kRows = 8, kPairs = 512, kRuns = 16;
    const int64_t pstride = int64_t{kPairs} * kPairElements;
    // The AMX block reads 16 rows.
    const AlignedArray<uint16_t> w(2 * pstride, 0x3f80), xr(16 * 2 * kPairs, 0x3f80);
    const AlignedArray<float> x(kRows * 2 * kPairs, 1.0f), out(kRows * 2 * kPanelRows, 0.0f);
    using Clock = std::chrono::steady_clock;
    const auto nanoseconds = [](Clock::time_point a, Clock::time_point b) {
      return std::chrono::duration<double, std::nano>(b - a).count();
    };
    const bool amx = CpuHasAmxBf16();
    // An AMX block right after the vector tiles ran at a third of its rate (on the Xeon of
    // docs/benchmarks.md section 23: 3 us, where blocks in a row take 1.1 us), so blocks
    // are timed as a GEMM runs them, kAmxRun in a row (1.5 us a block there).
    constexpr int kAmxRun = 8;
    t.dots_ns = t.widen_ns = t.amx_ns = 1e300;
    for (int run = 0; run < kRuns; ++run) {
      const auto t0 = Clock::now();
      TileDot<kRows>(kPairs, xr.get(), kPairs, w.get(), pstride, out.get(), 2 * kPanelRows,
                     2 * kPanelRows, nullptr, false);
      const auto t1 = Clock::now();
      TileWiden<kRows>(2 * kPairs, x.get(), 2 * kPairs, w.get(), pstride, out.get(), 2 * kPanelRows,
                       2 * kPanelRows, nullptr, false);
      const auto t2 = Clock::now();
      for (int block = 0; amx && block < kAmxRun; ++block) {
        AmxPanelPairBlock(kRows, kPairs, xr.get(), 2 * kPairs, w.get(), pstride, out.get(),
                          2 * kPanelRows, 2 * kPanelRows, nullptr, false);
      }
      const auto t3 = Clock::now();
      t.dots_ns = std::min(t.dots_ns, nanoseconds(t0, t1));
      t.widen_ns = std::min(t.widen_ns, nanoseconds(t1, t2));
      t.amx_ns = std::min(t.amx_ns, nanoseconds(t2, t3) / kAmxRun);
    }
    if (!amx) t.amx_ns = 0;
    return t;
  }();
  return timing;
}

Bf16Products CpuBf16Products() {
  static const Bf16Products products = [] {
    const char* env = std::getenv("ORCA_CPU_BF16_DOTS");
    if (!CpuHasBf16Dots() || CpuMaxSimdLevel() != SimdLevel::kAvx512 ||
        (env != nullptr && std::strcmp(env, "0") == 0)) {
      return Bf16Products::kOff;
    }
    if (CpuHasAmxBf16()) return Bf16Products::kAmx;
    if (env != nullptr && std::strcmp(env, "1") == 0) return Bf16Products::kDots;
    const Bf16DotsTiming& t = CpuBf16DotsTiming();
    return t.dots_ns * 1.1 <= t.widen_ns ? Bf16Products::kDots : Bf16Products::kOff;
  }();
  return products;
}

const char* Bf16ProductsName(Bf16Products products) {
  switch (products) {
    case Bf16Products::kAuto:
      return "auto";
    case Bf16Products::kDots:
      return "vdpbf16ps";
    case Bf16Products::kAmx:
      return "amx";
    case Bf16Products::kOff:
      break;
  }
  return "off";
}

bool CpuBf16DotsEnabled() { return CpuBf16Products() != Bf16Products::kOff; }

Bf16Products PackedGemmBf16Products(int m, SimdLevel level, Bf16Products products) {
  if (m < kPackedBf16DotMinRows || std::min(level, CpuMaxSimdLevel()) != SimdLevel::kAvx512) {
    return Bf16Products::kOff;
  }
  switch (products) {
    case Bf16Products::kAuto:
      return CpuBf16Products();
    case Bf16Products::kDots:
      return CpuHasBf16Dots() ? products : Bf16Products::kOff;
    case Bf16Products::kAmx:
      return CpuHasAmxBf16() ? products : Bf16Products::kOff;
    case Bf16Products::kOff:
      break;
  }
  return Bf16Products::kOff;
}

bool PackedGemmBf16RoundsActivations(int m, SimdLevel level, Bf16Products products) {
  return PackedGemmBf16Products(m, level, products) != Bf16Products::kOff;
}

int64_t PackedWeightBf16Elements(int64_t n, int64_t k) { return PackedRows(n) * 2 * Pairs(k); }

void PackWeightsBf16(const uint16_t* w, int64_t n, int64_t k, uint16_t* packed) {
  const int64_t kp = Pairs(k), panels = PackedRows(n) / kPanelRows;
  for (int64_t p = 0; p < panels; ++p) {
    uint16_t* dst = packed + p * kp * kPairElements;
    for (int64_t l = 0; l < kPanelRows; ++l) {
      const int64_t j = p * kPanelRows + l;
      for (int64_t c = 0; c < 2 * kp; ++c) {
        dst[c / 2 * kPairElements + 2 * l + c % 2] = j < n && c < k ? w[j * k + c] : 0;
      }
    }
  }
}

void UnpackWeightRowBf16(const uint16_t* packed, int64_t k, int64_t j, float* dst) {
  const uint16_t* src = packed + (j / kPanelRows) * Pairs(k) * kPairElements + 2 * (j % kPanelRows);
  for (int64_t c = 0; c < k; ++c) dst[c] = Bf16ToF32(src[c / 2 * kPairElements + c % 2]);
}

void PackedGemmBf16(int m, int n, int k, const float* x, int64_t ldx, const uint16_t* packed,
                    const float* bias, float* out, int64_t ldo, const ParallelForFn& parallel_for,
                    SimdLevel level, Bf16Products products) {
  if (m <= 0 || n <= 0) return;
  level = std::min(level, CpuMaxSimdLevel());
  Operands a{m,      k,    x,   ldx, PackedGemmBf16Products(m, level, products), {}, 0,
             packed, bias, out, ldo};
  if (k == 0) a.products = Bf16Products::kOff;
  if (a.products == Bf16Products::kDots) RoundRows(a, 0, m, parallel_for);
  if (a.products == Bf16Products::kAmx) {
    AmxGemm(a, n, parallel_for);
    return;
  }
  packed_internal::ForEachPanelPairBlock(
      n, k, parallel_for,
      [&](int64_t j0, int cols, int c0, int kc) { PanelPairBlock(level, a, j0, cols, c0, kc); });
}

}  // namespace orca
