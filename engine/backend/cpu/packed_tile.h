// What the packed GEMMs (packed_gemm.cc for float32 and float16 panels,
// packed_gemm_bf16.cc for bfloat16 ones) share: the walk over panel pairs and k blocks
// (and, for AVX2's float32 tiles, over chunks of a block), the tiles' accumulators
// (AVX-512: two vectors of 16 columns of a panel pair for each of up to 8 rows; AVX2: two
// vectors of 8 columns of one panel for each of up to 6 rows), their start from zero or
// from the partial sums of an earlier k block, and their end (bias, masked stores), and
// the weights' prefetch. Internal to those two files.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "engine/backend/cpu/packed_gemm.h"
#include "engine/backend/cpu/simd.h"

namespace orca::packed_internal {

inline constexpr int64_t kPanelPair = 2 * kPanelRows;
inline constexpr int kAvx512MaxRows = 8;
inline constexpr int kAvx2MaxRows = 6;

// How far ahead of its loads a tile prefetches its panels' weights, and where to: the
// first tile of a block streams the weights from memory, the next ones find them in the
// cache; without the prefetch the first tile's misses and its FMAs take turns (on an
// Emerald Rapids Xeon, decode of 16 llama-110m sequences 1.1x faster with 2 KiB into L1;
// docs/benchmarks.md section 17). Into L2 (T1), 4 KiB ahead: a prefetch into L1 holds
// one of the core's few L1 miss buffers until its line arrives; on an AMD EPYC (Zen 4)
// a 16-row decode's GEMMs 1.09x faster than with 2 KiB into L1, 1-8 rows unchanged
// (section 18). Prefetches past a panel's end fetch a line unused, never fault.
inline constexpr int kTilePrefetchBytes = 4096;

template <typename W>
inline void PrefetchAhead(const W* w) {
  _mm_prefetch(reinterpret_cast<const char*>(w) + kTilePrefetchBytes, _MM_HINT_T1);
}

// How far ahead an AVX2 tile that streams float32 panels by itself prefetches: 1 KiB
// (16 columns). On an AMD EPYC (Zen 3), against 4 KiB, a decode's float32 GEMMs
// (`orca-bench-small-gemm` BM_PackedDecodeLayers) ran 1.11-1.2x faster at one and two
// rows, 1.0-1.07x at four and six, within 7-13 % of the rate at which the same tasks
// merely sum the same bytes (BM_ReadDecodeLayers). 16-bit panels keep kTilePrefetchBytes: at 1 KiB
// their decode GEMMs moved 0.92-1.08x, within the host's noise (docs/benchmarks.md
// section 30).
inline constexpr int kAvx2F32TilePrefetchBytes = 1024;

// Where an AVX2 tile prefetches weights: at its input column c, the line at
// at + c * step_q8 / 256 (into L2, as PrefetchAhead). A lone tile (OwnStream) runs
// `ahead_bytes` ahead of its own loads; the tiles of ChunkedTiles share the next
// chunk's lines among them.
struct TilePrefetch {
  const char* at;
  int64_t step_q8;  // bytes a column, times 256

  void At(int c) const { _mm_prefetch(at + ((c * step_q8) >> 8), _MM_HINT_T1); }
};

// A tile that streams panel (bytes_per_column a column) from memory by itself,
// prefetching ahead_bytes ahead of its loads.
inline TilePrefetch OwnStream(const void* panel, int64_t bytes_per_column, int ahead_bytes) {
  return {static_cast<const char*>(panel) + ahead_bytes, bytes_per_column << 8};
}

// Columns of a panel's block that ChunkedTiles runs every tile over before the next ones:
// 8 KiB of float32 weights and 8 KiB of 16 rows of x, in L1 while three tiles go past.
inline constexpr int kTileChunkColumns = 128;

// m rows of x against one panel's block of kc input columns, in tiles of up to max_rows
// rows, calling tile(c, kc, r, rows, prefetch) for columns [c, c + kc) and rows
// [r, r + rows). One tile (m <= max_rows) runs over the whole block streaming its own
// weights. Several run chunk by chunk, each chunk's tiles prefetching the next chunk's
// lines an equal share each (the last chunk's tiles: as many columns of `after`, where
// the walk goes next), so that memory streams while every tile multiplies: with the whole
// block per tile, the first tile waited on memory and the others multiplied from L2
// while nothing streamed (AMD EPYC, Zen 3: a 16-row float32 decode's GEMMs took the sum
// of the two times, not the larger; docs/benchmarks.md section 25). `cold`: nothing
// prefetched this block's first chunk (a task's first block), so its first tile streams
// it as a lone tile does. Accumulators go through `out` between chunks: the same sums in
// the same order. For float32 panels: 16-bit ones (half the bytes a column) gained
// nothing from it there.
template <typename Tile>
void ChunkedTiles(int m, int max_rows, int kc, const void* panel, int64_t bytes_per_column,
                  const void* after, bool cold, const Tile& tile) {
  if (m <= max_rows || kc == 0) {  // (no columns: every tile stores its start)
    for (int r = 0; r < m; r += max_rows) {
      tile(0, kc, r, std::min(max_rows, m - r),
           OwnStream(panel, bytes_per_column, kAvx2F32TilePrefetchBytes));
    }
    return;
  }
  const int tiles = (m + max_rows - 1) / max_rows;
  const char* p = static_cast<const char*>(panel);
  for (int c = 0; c < kc; c += kTileChunkColumns) {
    const int ck = std::min(kTileChunkColumns, kc - c);
    const bool last = c + ck >= kc;
    const char* next = last ? static_cast<const char*>(after) : p + (c + ck) * bytes_per_column;
    const int next_columns = last ? ck : std::min(kTileChunkColumns, kc - c - ck);
    const bool own = cold && c == 0;  // tile 0 streams this chunk; the others share the next
    const int sharers = own ? tiles - 1 : tiles;
    const int64_t share = next_columns * bytes_per_column / sharers;
    // Each tile's cursor runs a line past its share, so that the rounding of its steps
    // leaves no line between two shares unfetched.
    const int64_t step_q8 = ((share + 64) << 8) / ck;
    for (int t = 0; t < tiles; ++t) {
      const int r = t * max_rows;
      const TilePrefetch pf =
          own && t == 0
              ? OwnStream(p + c * bytes_per_column, bytes_per_column, kAvx2F32TilePrefetchBytes)
              : TilePrefetch{next + (own ? t - 1 : t) * share, step_q8};
      tile(c, ck, r, std::min(max_rows, m - r), pf);
    }
  }
}

// Calls block(j0, cols, c0, kc) for every panel pair (output columns [j0, j0 + cols),
// cols <= 32) and every block of input columns [c0, c0 + kc) of at most kPackedKBlock,
// in increasing c0 within a pair (a block resumes from the sums the one before stored);
// the pairs run as parallel_for's tasks. k == 0 gives each pair one empty block (the
// bias, or zeros).
template <typename Block>
void ForEachPanelPairBlock(int n, int k, const ParallelForFn& parallel_for, const Block& block) {
  const int64_t pairs = (n + kPanelPair - 1) / kPanelPair;
  parallel_for(pairs, [&](int64_t q) {
    const int64_t j0 = q * kPanelPair;
    const int cols = static_cast<int>(std::min<int64_t>(kPanelPair, n - j0));
    int c0 = 0;
    do {
      const int kc = std::min(kPackedKBlock, k - c0);
      block(j0, cols, c0, kc);
      c0 += kc;
    } while (c0 < k);
  });
}

// The accumulators of an R-row tile over `cols` (1..32) columns.
template <int R>
struct TileSums {
  __m512 a0[R], a1[R];  // columns [0, 16) and [16, 32) of each row
  __mmask16 m0, m1;     // the stored columns of each half

  // From out's values with `accumulate` (a later k block), else from zero.
  ORCA_AVX512 TileSums(const float* out, int64_t ldo, int cols, bool accumulate)
      : m0(FirstLanes(cols)), m1(FirstLanes(std::max(0, cols - kPanelRows))) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      a0[r] = accumulate ? _mm512_maskz_loadu_ps(m0, out + r * ldo) : _mm512_setzero_ps();
      a1[r] = accumulate ? _mm512_maskz_loadu_ps(m1, out + r * ldo + 16) : _mm512_setzero_ps();
    }
  }

  // Adds `bias` (null but on the last block) and stores the columns.
  ORCA_AVX512 void Store(const float* bias, float* out, int64_t ldo) {
    if (bias != nullptr) {
      const __m512 b0 = _mm512_maskz_loadu_ps(m0, bias), b1 = _mm512_maskz_loadu_ps(m1, bias + 16);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        a0[r] = _mm512_add_ps(a0[r], b0);
        a1[r] = _mm512_add_ps(a1[r], b1);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      _mm512_mask_storeu_ps(out + r * ldo, m0, a0[r]);
      _mm512_mask_storeu_ps(out + r * ldo + 16, m1, a1[r]);
    }
  }
};

// The accumulators of an R-row AVX2 tile over `cols` (1..16) columns of one panel.
template <int R>
struct TileSumsAvx2 {
  __m256 a0[R], a1[R];  // columns [0, 8) and [8, 16) of each row
  __m256i m0, m1;       // the stored columns of each half
  bool full;            // all 16

  // From out's values with `accumulate` (a later k block or chunk), else from zero.
  // A whole panel's columns (cols == 16) load and store unmasked: AMD's masked stores
  // are microcoded, and ChunkedTiles stores the sums every chunk.
  ORCA_AVX2 TileSumsAvx2(const float* out, int64_t ldo, int cols, bool accumulate)
      : full(cols == kPanelRows) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(cols), lane);
    m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(cols - 8), lane);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      if (!accumulate) {
        a0[r] = a1[r] = _mm256_setzero_ps();
      } else if (full) {
        a0[r] = _mm256_loadu_ps(out + r * ldo);
        a1[r] = _mm256_loadu_ps(out + r * ldo + 8);
      } else {
        a0[r] = _mm256_maskload_ps(out + r * ldo, m0);
        a1[r] = _mm256_maskload_ps(out + r * ldo + 8, m1);
      }
    }
  }

  // Adds `bias` (null but on the last block) and stores the columns.
  ORCA_AVX2 void Store(const float* bias, float* out, int64_t ldo) {
    if (bias != nullptr) {
      const __m256 b0 = _mm256_maskload_ps(bias, m0), b1 = _mm256_maskload_ps(bias + 8, m1);
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) {
        a0[r] = _mm256_add_ps(a0[r], b0);
        a1[r] = _mm256_add_ps(a1[r], b1);
      }
    }
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      if (full) {
        _mm256_storeu_ps(out + r * ldo, a0[r]);
        _mm256_storeu_ps(out + r * ldo + 8, a1[r]);
      } else {
        _mm256_maskstore_ps(out + r * ldo, m0, a0[r]);
        _mm256_maskstore_ps(out + r * ldo + 8, m1, a1[r]);
      }
    }
  }
};

// Rows of the packed form of an [n, *] weight: n rounded up to a panel pair.
inline int64_t PackedRows(int64_t n) { return (n + kPanelPair - 1) / kPanelPair * kPanelPair; }

}  // namespace orca::packed_internal
