#include "engine/backend/cpu/packed_gemm_amx.h"

#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "engine/backend/cpu/packed_gemm.h"
#include "engine/backend/cpu/packed_tile.h"
#include "engine/backend/cpu/simd.h"

#define ORCA_AMX                                                                \
  __attribute__((                                                               \
      target("amx-tile,amx-bf16,avx512f,avx512bw,avx512dq,avx512vl,avx512bf16," \
             "avx2,fma,f16c")))

namespace orca {

bool CpuHasAmxBf16() {
  static const bool usable = [] {
    const char* env = std::getenv("ORCA_CPU_AMX");
    if (env != nullptr && std::strcmp(env, "0") == 0) return false;
    if (!__builtin_cpu_supports("amx-tile") || !__builtin_cpu_supports("amx-bf16") ||
        CpuMaxSimdLevel() != SimdLevel::kAvx512 || !CpuHasBf16Dots()) {
      return false;
    }
    // Linux (5.16 on) hands out the tiles' 8 KiB of register state only to processes
    // that ask; a tile instruction without it faults.
    constexpr long kArchReqXcompPerm = 0x1023;
    constexpr long kXfeatureXtileData = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtileData) == 0;
  }();
  return usable;
}

namespace packed_internal {
namespace {

// Sixteen column pairs of one panel: a weight tile (16 rows of 64 bytes).
constexpr int kStepPairs = 16;
constexpr int kPairElements = 2 * kPanelRows;
constexpr int kTileBytes = 64;

// Palette 1, every tile 16 rows of 64 bytes: tiles 0-3 the sums (row block b, panel p at
// 2b + p), 4-5 the rows of x, 6-7 the weights of the two panels.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

const TileConfig& Config() {
  static const TileConfig config = [] {
    TileConfig c;
    for (int t = 0; t < 8; ++t) {
      c.bytes_per_row[t] = kTileBytes;
      c.rows[t] = 16;
    }
    return c;
  }();
  return config;
}

// The compiler does not know that the tile instructions (inline assembly without a
// memory clobber in GCC's headers) read and write memory: keep its loads and stores on
// their side.
inline void MemoryFence() { asm volatile("" ::: "memory"); }

// The weights' prefetch distance ahead of a step's loads, as the vector tiles'
// (packed_tile.h), into L2.
ORCA_AMX inline void PrefetchStep(const uint16_t* w) {
  const char* p = reinterpret_cast<const char*>(w) + kTilePrefetchBytes;
#pragma GCC unroll 16
  for (int line = 0; line < kStepPairs; ++line) _mm_prefetch(p + line * 64, _MM_HINT_T1);
}

// `steps` steps of one (kTwo: two) row blocks of x against both panels, into the sums'
// tiles, which the caller zeroed, prefetching the panels' next weights (kPrefetch). x:
// the first row block's first pair; its second row block 16 rows on.
template <bool kTwo, bool kPrefetch>
ORCA_AMX void Steps(int steps, const uint16_t* x, int64_t ldx, const uint16_t* w0,
                    const uint16_t* w1) {
  const int64_t ldx_bytes = ldx * 2;
  for (int s = 0; s < steps; ++s) {
    const uint16_t* xs = x + s * 2 * kStepPairs;
    const uint16_t* ws0 = w0 + s * kStepPairs * kPairElements;
    const uint16_t* ws1 = w1 + s * kStepPairs * kPairElements;
    if (kPrefetch) {
      PrefetchStep(ws0);
      PrefetchStep(ws1);
    }
    _tile_loadd(6, ws0, kTileBytes);
    _tile_loadd(7, ws1, kTileBytes);
    _tile_loadd(4, xs, ldx_bytes);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    if (kTwo) {
      _tile_loadd(5, xs + 16 * ldx, ldx_bytes);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
  }
}

// out's rows [0, rows) of the panel pair from the sums' tiles of one row block (sums:
// 16 rows of 32 floats).
ORCA_AMX void Emit(const float* sums, int rows, float* out, int64_t ldo, int cols,
                   const float* bias, bool accumulate) {
  const __mmask16 m0 = FirstLanes(cols), m1 = FirstLanes(std::max(0, cols - kPanelRows));
  const __m512 b0 = bias != nullptr ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_setzero_ps();
  const __m512 b1 = bias != nullptr ? _mm512_maskz_loadu_ps(m1, bias + 16) : _mm512_setzero_ps();
  for (int r = 0; r < rows; ++r) {
    float* o = out + r * ldo;
    __m512 s0 = _mm512_add_ps(_mm512_loadu_ps(sums + r * 32), b0);
    __m512 s1 = _mm512_add_ps(_mm512_loadu_ps(sums + r * 32 + 16), b1);
    if (accumulate) {
      s0 = _mm512_add_ps(s0, _mm512_maskz_loadu_ps(m0, o));
      s1 = _mm512_add_ps(s1, _mm512_maskz_loadu_ps(m1, o + 16));
    }
    _mm512_mask_storeu_ps(o, m0, s0);
    _mm512_mask_storeu_ps(o + 16, m1, s1);
  }
}

}  // namespace

namespace {
ORCA_AMX void LoadTiles() {
  MemoryFence();
  _tile_loadconfig(&Config());
}
ORCA_AMX void ReleaseTiles() {
  MemoryFence();
  _tile_release();
}
}  // namespace

AmxTileScope::AmxTileScope() { LoadTiles(); }
AmxTileScope::~AmxTileScope() { ReleaseTiles(); }

void AmxPanelPairBlock(int m, int pairs, const uint16_t* xr, int64_t ldxr, const uint16_t* w,
                       int64_t pstride, float* out, int64_t ldo, int cols, const float* bias,
                       bool accumulate) {
  const AmxTileScope tiles;
  AmxPanelPairBlockInScope(m, pairs, xr, ldxr, w, pstride, out, ldo, cols, bias, accumulate);
}

ORCA_AMX void AmxPanelPairBlockInScope(int m, int pairs, const uint16_t* xr, int64_t ldxr,
                                       const uint16_t* w, int64_t pstride, float* out, int64_t ldo,
                                       int cols, const float* bias, bool accumulate) {
  const int full = pairs / kStepPairs, tail = pairs % kStepPairs;
  // A last step of fewer than 16 pairs takes the weights from zero-padded copies: the
  // panel's next pairs are another panel's, or past the weights' end. x is padded.
  alignas(64) uint16_t tail_w[2][kStepPairs * kPairElements];
  if (tail > 0) {
    for (int p = 0; p < 2; ++p) {
      const uint16_t* src = w + p * pstride + int64_t{full} * kStepPairs * kPairElements;
      std::memcpy(tail_w[p], src, sizeof(uint16_t) * tail * kPairElements);
      std::memset(tail_w[p] + tail * kPairElements, 0,
                  sizeof(uint16_t) * (kStepPairs - tail) * kPairElements);
    }
  }
  alignas(64) float sums[2][16 * 32];
  MemoryFence();
  for (int r = 0; r < m; r += 32) {
    const bool two = m - r > 16;
    const uint16_t* x = xr + r * ldxr;
    _tile_zero(0);
    _tile_zero(1);
    if (two) {
      _tile_zero(2);
      _tile_zero(3);
      Steps<true, true>(full, x, ldxr, w, w + pstride);
      if (tail > 0) Steps<true, false>(1, x + full * 2 * kStepPairs, ldxr, tail_w[0], tail_w[1]);
    } else {
      Steps<false, true>(full, x, ldxr, w, w + pstride);
      if (tail > 0) Steps<false, false>(1, x + full * 2 * kStepPairs, ldxr, tail_w[0], tail_w[1]);
    }
    // Whole row blocks without a bias or earlier sums go straight to out.
    const bool direct = !accumulate && bias == nullptr && cols == 2 * kPanelRows;
    const int64_t ldo_bytes = ldo * static_cast<int64_t>(sizeof(float));
    const bool direct0 = direct && m - r >= 16, direct1 = direct && m - r >= 32;
    float* out0 = out + r * ldo;
    float* out1 = out + (r + 16) * ldo;
    if (direct0) {
      _tile_stored(0, out0, ldo_bytes);
      _tile_stored(1, out0 + 16, ldo_bytes);
    } else {
      _tile_stored(0, sums[0], 32 * sizeof(float));
      _tile_stored(1, sums[0] + 16, 32 * sizeof(float));
    }
    if (two && direct1) {
      _tile_stored(2, out1, ldo_bytes);
      _tile_stored(3, out1 + 16, ldo_bytes);
    } else if (two) {
      _tile_stored(2, sums[1], 32 * sizeof(float));
      _tile_stored(3, sums[1] + 16, 32 * sizeof(float));
    }
    MemoryFence();
    if (!direct0) Emit(sums[0], std::min(16, m - r), out0, ldo, cols, bias, accumulate);
    if (two && !direct1) Emit(sums[1], std::min(16, m - r - 16), out1, ldo, cols, bias, accumulate);
    MemoryFence();
  }
}

}  // namespace packed_internal
}  // namespace orca
