// bfloat16 GEMMs for prefill-sized batches through oneDNN, on CPUs whose instructions
// multiply bfloat16 pairs (AVX512_BF16's vdpbf16ps, AMX-BF16): about 2x the float32
// sgemm rate there (docs/benchmarks.md, "16-bit weights on the CPU").
//
//   out[m, n] = bf16(x)[m, :] . w[n, :] (+ bias[n]),  float32 accumulation
//
// The activations are rounded to bfloat16 for the product (as every bfloat16 engine
// does; relative error of an output about 3e-4 against float64 over the float32
// activations, where the float32 paths give about 1e-6); weights are used in place
// ([n, k] row-major bfloat16, as loaded), one primitive per weight shape with the row
// count given at run time. Used by the CPU backend only where Available(); elsewhere
// 16-bit weights are widened to float32 for sgemm.
//
// One instance per backend; not thread-safe (a Backend is used by one thread).
#pragma once

#include <cstdint>
#include <memory>

namespace orca {

// Rows from which the CPU backend gives bfloat16 GEMMs to oneDNN where Available():
// below, a GEMM is bound by the weights' bytes and bfloat16 products gain nothing, so
// small decode batches keep float32 arithmetic; from 8 rows on they are faster (decode
// at 16 sequences 1.2x, at 32 1.5x; docs/benchmarks.md).
inline constexpr int kOneDnnBf16MinRows = 8;

class OneDnnBf16Gemm {
 public:
  // Whether this build has oneDNN and this CPU has bfloat16 dot products, and
  // ORCA_CPU_ONEDNN is not "0" (benchmarks compare with the widened path).
  static bool Available();

  explicit OneDnnBf16Gemm(int threads);
  ~OneDnnBf16Gemm();

  // x: [m, k] float32, row stride ldx; w: [n, k] bfloat16 bits; out: [m, n], row stride
  // ldo; bias may be null. Returns false when oneDNN refuses the shape or fails (out
  // may then be partly written): the caller computes the whole product another way.
  bool Run(int m, int n, int k, const float* x, int64_t ldx, const uint16_t* w, const float* bias,
           float* out, int64_t ldo);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace orca
