// bfloat16 products on AMX tiles (AMX-TILE and AMX-BF16: Intel Xeons since Sapphire
// Rapids) over PackedGemmBf16's panels (packed_gemm_bf16.h). Internal to that file and
// to attention_kernel.cc's bfloat16 prefill attention.
//
// A panel's k-pair-major layout is the weight operand tdpbf16ps takes: sixteen input
// column pairs of a panel, 16 x 64 bytes, are one tile as they lie. A block multiplies
// up to two 16-row tiles of x (rounded to bfloat16) by a panel pair's two weight tiles
// into four 16 x 16 float32 tiles of sums, sixteen column pairs a step: one instruction
// does what 256 vdpbf16ps do, so a 16-row decode GEMM waits only for its weights' bytes.
// The sums' order within a step is the hardware's; each output's error is that of the
// bfloat16 products (x rounded to nearest even, float32 sums).
//
// Tile state is per thread: a block (or an AmxTileScope around many) loads the
// configuration it needs and releases the tiles when it ends, so nothing else on the
// thread (oneDNN's own AMX kernels) can find it changed.
#pragma once

#include <cstdint>

namespace orca {

// Whether this process runs AMX-BF16 tiles: the CPU has AMX-TILE, AMX-BF16 and AVX-512,
// Linux granted the process the tiles' state (arch_prctl(ARCH_REQ_XCOMP_PERM), asked
// once, on the first call), and ORCA_CPU_AMX is not "0".
bool CpuHasAmxBf16();

namespace packed_internal {

// Rows of x an AMX block multiplies: m rounded up to 16. x's rows past m are read and
// must hold finite values (zeros); their sums are not stored.
inline int AmxRows(int m) { return (m + 15) / 16 * 16; }

// Column pairs an AMX x row holds: kp rounded up to 16, the pairs past kp zero.
inline int64_t AmxPairs(int64_t kp) { return (kp + 15) / 16 * 16; }

// out[r, l] = (out[r, l] if accumulate) + sum over pairs p < `pairs` of
//   xr[r, 2p] w[l][2p] + xr[r, 2p + 1] w[l][2p + 1]  (+ bias[l] where bias is not null)
// for rows r < m and columns l < cols (<= 32) of a panel pair. xr: bfloat16 rows with a
// stride of ldxr elements (a multiple of 32), AmxRows(m) of them, each readable to
// AmxPairs(pairs) pairs; w: the first panel's first pair (packed_gemm_bf16.h's layout),
// the second panel pstride elements on. Only where CpuHasAmxBf16().
void AmxPanelPairBlock(int m, int pairs, const uint16_t* xr, int64_t ldxr, const uint16_t* w,
                       int64_t pstride, float* out, int64_t ldo, int cols, const float* bias,
                       bool accumulate);

// The tile configuration AmxPanelPairBlock loads, held for a scope: loaded on
// construction, the tiles released on destruction. Loading it costs about as much as a
// 32 x 32 x 64 block's products, so callers of many small blocks (a prefill chunk's
// attention) load it once and call AmxPanelPairBlockInScope. Only where CpuHasAmxBf16();
// nothing else on the thread may use tiles inside the scope.
class AmxTileScope {
 public:
  AmxTileScope();
  ~AmxTileScope();
  AmxTileScope(const AmxTileScope&) = delete;
  AmxTileScope& operator=(const AmxTileScope&) = delete;
};

// AmxPanelPairBlock inside an AmxTileScope of the calling thread.
void AmxPanelPairBlockInScope(int m, int pairs, const uint16_t* xr, int64_t ldxr, const uint16_t* w,
                              int64_t pstride, float* out, int64_t ldo, int cols, const float* bias,
                              bool accumulate);

}  // namespace packed_internal
}  // namespace orca
