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
//  - from kPackedBf16DotMinRows rows, where the CPU multiplies bfloat16 pairs faster than
//    the float32 FMAs below (CpuBf16Products): x rounded to bfloat16 (nearest even) and
//    multiplied pair by pair into float32 sums, by AMX tiles where the process runs them
//    (packed_gemm_amx.h: the panels are their weight operand as they lie) or else by
//    vdpbf16ps (AVX512_BF16); an output's error about 1e-3 of its magnitude at most,
//    2-3e-4 typical. vdpbf16ps ran at twice the FMAs' rate on a Zen 4, at 0.6 of it on
//    an Emerald Rapids Xeon, so the process times both tiles once and takes vdpbf16ps
//    only where it is at least 10 % faster.
//  - otherwise: each weight widened in registers and float32 FMAs with x as it is (the
//    float32 product of the bfloat16 weights, exact up to the sums' rounding).
// Paths by SimdLevel: AVX-512 (tiles of up to 8 rows by 32 columns; AMX: 32 rows by 32),
// AVX2+FMA (the widening tile over one panel, up to 4 rows by 16 columns: a column
// pair's 32-byte load widened by the same shift and mask into two vectors of 8 outputs)
// and a portable loop. Sums run over c in blocks of kPackedKBlock columns (in order
// within a block, but on AMX tiles: the hardware's order within 32 columns).
// Thread-safe; `parallel_for` spreads the panel pairs.
#pragma once

#include <cstdint>

#include "engine/backend/cpu/packed_gemm.h"
#include "engine/backend/cpu/simd.h"

namespace orca {

inline constexpr int kPackedBf16DotMinRows = 8;

// The arithmetic of the rows that take bfloat16 products: chosen by the process
// (kAuto), vdpbf16ps (kDots), AMX tiles (kAmx), or none: float32 FMAs (kOff).
enum class Bf16Products { kAuto, kDots, kAmx, kOff };

// "auto", "vdpbf16ps", "amx" or "off".
const char* Bf16ProductsName(Bf16Products products);

// The vdpbf16ps tile's, the AMX block's and the widening tile's best time over 8 rows by
// a panel pair's 32 columns by 1024 input columns, in L2, on this core (16 alternating
// runs each, the AMX block's a run of 8 in a row, as a GEMM runs them; the first time it
// is asked; zero for what the CPU lacks: all three where it lacks AVX512_BF16).
struct Bf16DotsTiming {
  double dots_ns = 0;
  double amx_ns = 0;
  double widen_ns = 0;
};
const Bf16DotsTiming& CpuBf16DotsTiming();

// How PackedGemmBf16 multiplies from kPackedBf16DotMinRows rows (never kAuto), where
// the CPU has AVX512_BF16 and ORCA_CPU_BF16_DOTS is not "0": AMX tiles where the process
// runs them (CpuHasAmxBf16(): one tile instruction does the work of 256 vdpbf16ps, and
// the timing above, taken as a server starts, can catch AMX cold or sharing its core),
// else vdpbf16ps where ORCA_CPU_BF16_DOTS is "1" or CpuBf16DotsTiming() has them at
// least 10 % faster than widening; kOff otherwise.
Bf16Products CpuBf16Products();

// CpuBf16Products() != kOff.
bool CpuBf16DotsEnabled();

// How PackedGemmBf16 of m rows at `level` multiplies when asked for `products` (the
// first case above, or kOff): a forced kDots or kAmx the CPU lacks is kOff.
Bf16Products PackedGemmBf16Products(int m, SimdLevel level = CpuSimdLevel(),
                                    Bf16Products products = Bf16Products::kAuto);

// PackedGemmBf16Products(m, level, products) != kOff: x rounded to bfloat16.
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
