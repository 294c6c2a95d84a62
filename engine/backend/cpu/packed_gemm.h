// Float32 GEMMs on linear weights packed once at load, for every batch size:
//
//   out[m, n] = x[m, :] . w[n, :] (+ bias[n])
//
// A weight [n, k] is stored as panels of kPanelRows (16) output rows, each panel k-major
// (element (j, c) at ((j / 16) * k + c) * 16 + j % 16), the rows padded with zeros to a
// multiple of kPackedRowMultiple. A kernel step loads the 16 (AVX-512: 32) weights of
// one input column c, contiguous, and multiplies them by x[r, c] broadcast for up to 8
// rows r at once, keeping every partial sum of the tile in registers to the end of k:
// two weight loads and eight broadcasts per sixteen FMAs, no per-output horizontal sums,
// and one sequential stream of weights. Row-major weights force either those horizontal
// sums (SmallGemm: 44-64 % of sgemm's rate at 16 rows) or a pack of the whole matrix on
// every call (sgemm); packed once, a 16-row product runs at about the rate of a large
// one, and large ones at about sgemm's (docs/benchmarks.md, "Packed weights").
//
// Paths by SimdLevel: AVX-512 (tiles of up to 8 rows by 32 columns), AVX2+FMA (up to
// 6 rows by 16 columns), and a portable loop; sums run in float32 over c in order, in
// blocks of kPackedKBlock columns (so a panel's block stays in the core's cache while
// every row of x goes past it). Thread-safe; `parallel_for` spreads the panel pairs.
//
// float16 weights (checkpoints stored in float16 and kept so: half the bytes to stream)
// use the same panels element for element, 16 bits each (PackWeightsF16). Below 64 rows
// (decode batches) the tiles widen each load in registers (vcvtph2ps, exact); from 64
// rows a panel pair's k block is widened once into float32 and the float32 tiles run on
// it. Either way the products and their order are those of PackedGemm over the
// widened weights, so the results are equal bit for bit.
#pragma once

#include <cstdint>

#include "engine/backend/cpu/simd.h"
#include "engine/backend/cpu/small_gemm.h"

namespace orca {

inline constexpr int kPanelRows = 16;
inline constexpr int kPackedRowMultiple = 2 * kPanelRows;  // the AVX-512 tile's width
inline constexpr int kPackedKBlock = 2048;

// On CPUs with AVX2 but not AVX-512, the CPU backend gives GEMMs of this many rows or more
// (prefill chunks) over packed weights to OpenBLAS's sgemm instead, unpacking the panels
// into row-major float32 a chunk at a time: there its kernels outrun the 6-row tiles
// (docs/benchmarks.md section 22), where AVX-512's 8 x 32 tiles outrun sgemm.
inline constexpr int kAvx2SgemmMinRows = 64;

// Floats the packed form of an [n, k] weight takes.
int64_t PackedWeightFloats(int64_t n, int64_t k);

// packed = w [n, k] (row-major, contiguous) in the layout above; `packed` holds
// PackedWeightFloats(n, k) floats.
void PackWeights(const float* w, int64_t n, int64_t k, float* packed);

// dst = row j of the [*, k] weight `packed` holds (k floats).
void UnpackWeightRow(const float* packed, int64_t k, int64_t j, float* dst);

// dst = rows [first, first + count) of the [*, k] weight `packed` holds, row-major with
// row stride k: equal to UnpackWeightRow row by row. Whole panels are transposed eight
// columns by eight rows in registers where the CPU has AVX2 and k is a multiple of 8 (a
// panel's lines read once, where a row at a time reads every line of the panel for each
// of its sixteen rows: 2.8-4.5x on a Zen 3, docs/benchmarks.md section 29; prefill's
// sgemm path unpacks every weight per chunk).
void UnpackWeightRows(const float* packed, int64_t k, int64_t first, int64_t count, float* dst);

// As PackWeights for float16 bits: `packed` holds PackedWeightFloats(n, k) elements of
// 16 bits.
void PackWeightsF16(const uint16_t* w, int64_t n, int64_t k, uint16_t* packed);

// dst = row j of the [*, k] float16 weight `packed` holds, widened to float32.
void UnpackWeightRowF16(const uint16_t* packed, int64_t k, int64_t j, float* dst);

// As UnpackWeightRows for a float16 weight (PackWeightsF16), widened to float32.
void UnpackWeightRowsF16(const uint16_t* packed, int64_t k, int64_t first, int64_t count,
                         float* dst);

// x: [m, k] with row stride ldx; packed: PackWeights of an [n, k] weight; out: [m, n]
// with row stride ldo (only columns [0, n) are written); bias may be null.
// parallel_for(count, fn) must run fn(i) for i in [0, count). `level` above the CPU's
// is lowered to it.
void PackedGemm(int m, int n, int k, const float* x, int64_t ldx, const float* packed,
                const float* bias, float* out, int64_t ldo, const ParallelForFn& parallel_for,
                SimdLevel level = CpuSimdLevel());

// As PackedGemm (no bias) over input columns [0, k) of a weight packed with packed_k >= k
// columns (PackWeights(w, n, packed_k, packed)): the same sums as PackedGemm over the
// whole weight with x zero in columns [k, packed_k), bit for bit. For causal attention,
// whose block of query rows sees only the first k keys.
void PackedGemmPrefix(int m, int n, int k, int64_t packed_k, const float* x, int64_t ldx,
                      const float* packed, float* out, int64_t ldo,
                      const ParallelForFn& parallel_for, SimdLevel level = CpuSimdLevel());

// As PackedGemm, for a float16 weight packed by PackWeightsF16 (see above).
void PackedGemmF16(int m, int n, int k, const float* x, int64_t ldx, const uint16_t* packed,
                   const float* bias, float* out, int64_t ldo, const ParallelForFn& parallel_for,
                   SimdLevel level = CpuSimdLevel());

}  // namespace orca
