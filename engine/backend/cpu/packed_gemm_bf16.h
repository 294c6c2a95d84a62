// bfloat16 GEMMs on linear weights packed once at load (packed_gemm.h's panels, for
// weights kept in bfloat16):
//
//   out[m, n] = x[m, :] . w[n, :] (+ bias[n])
//
// A weight [n, k] is stored as panels of kPanelRows (16) output rows, each panel
// k-pair-major: element (j, c) at ((j / 16) * kp + c / 2) * 32 + (j % 16) * 2 + c % 2,
// kp = ceil(k / 2), rows padded with zeros to a multiple of kPackedRowMultiple and an odd
// k's last pair padded with a zero. One 64-byte load holds two input columns of sixteen
// outputs: the operand vdpbf16ps (AVX512_BF16) multiplies, pair by pair into float32
// lanes, and two shifts widen to float32 exactly.
//
// The arithmetic depends on the rows, as for the row-major bfloat16 weights
// (onednn_gemm.h):
//  - from kPackedBf16DotMinRows rows, where the CPU has AVX512_BF16 and its bfloat16
//    products outrun the float32 FMAs below (CpuBf16DotsEnabled): x rounded to bfloat16
//    (nearest even) and multiplied by vdpbf16ps, float32 sums (an output's error about
//    1e-3 of its magnitude at most; 2-3e-4 typical). Those GEMMs are bound by
//    arithmetic: on a Zen 4 the bfloat16 products ran at twice the FMAs' rate, on an
//    Emerald Rapids Xeon at 0.6 of it, so the process times both tiles once and takes
//    the products only where they are at least 10 % faster.
//  - otherwise: each weight widened in registers and float32 FMAs with x as it is (the
//    float32 product of the bfloat16 weights, exact up to the sums' rounding).
// Paths by SimdLevel: AVX-512 (tiles of up to 8 rows by 32 columns), AVX2+FMA (the
// widening tile over one panel, up to 4 rows by 16 columns: a column pair's 32-byte load
// widened by the same shift and mask into two vectors of 8 outputs) and a portable loop.
// Sums run over c in order (pairwise with the products), in blocks of kPackedKBlock
// columns.
// Thread-safe; `parallel_for` spreads the panel pairs.
#pragma once

#include <cstdint>

#include "engine/backend/cpu/packed_gemm.h"
#include "engine/backend/cpu/simd.h"

namespace orca {

inline constexpr int kPackedBf16DotMinRows = 8;

// The bfloat16-product tile's and the widening tile's best time over one 8 x 32 tile of
// 1024 input columns, in L2, on this core (16 alternating runs each, the first time it
// is asked; zeros where the CPU lacks AVX512_BF16).
struct Bf16DotsTiming {
  double dots_ns = 0;
  double widen_ns = 0;
};
const Bf16DotsTiming& CpuBf16DotsTiming();

// Whether PackedGemmBf16 multiplies bfloat16 products from kPackedBf16DotMinRows rows:
// where the CPU has AVX512_BF16 and ORCA_CPU_BF16_DOTS is "1", or is unset and
// CpuBf16DotsTiming() has them at least 10 % faster; never with ORCA_CPU_BF16_DOTS=0.
bool CpuBf16DotsEnabled();

// The choice above (kAuto) or one made by the caller (tests, benchmarks): kOn takes
// the products wherever the CPU has them, kOff never.
enum class Bf16Products { kAuto, kOn, kOff };

// Whether PackedGemmBf16 of m rows at `level` rounds x to bfloat16 (the first case above).
bool PackedGemmBf16RoundsActivations(int m, SimdLevel level = CpuSimdLevel(),
                                     Bf16Products products = Bf16Products::kAuto);

// bfloat16 elements the packed form of an [n, k] weight takes.
int64_t PackedWeightBf16Elements(int64_t n, int64_t k);

// packed = w [n, k] (row-major bfloat16 bits, contiguous) in the layout above; `packed`
// holds PackedWeightBf16Elements(n, k) elements.
void PackWeightsBf16(const uint16_t* w, int64_t n, int64_t k, uint16_t* packed);

// dst = row j of the [*, k] weight `packed` holds, widened to float32 (k floats).
void UnpackWeightRowBf16(const uint16_t* packed, int64_t k, int64_t j, float* dst);

// x: [m, k] float32 with row stride ldx; packed: PackWeightsBf16 of an [n, k] weight;
// out: [m, n] with row stride ldo (only columns [0, n) are written); bias may be null.
// parallel_for(count, fn) must run fn(i) for i in [0, count). `level` above the CPU's is
// lowered to it.
void PackedGemmBf16(int m, int n, int k, const float* x, int64_t ldx, const uint16_t* packed,
                    const float* bias, float* out, int64_t ldo, const ParallelForFn& parallel_for,
                    SimdLevel level = CpuSimdLevel(), Bf16Products products = Bf16Products::kAuto);

}  // namespace orca
