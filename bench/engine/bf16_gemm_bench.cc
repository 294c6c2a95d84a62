// 16-bit weights on the CPU: the GEMM choices of issue 18 measured side by side on the
// shapes of a prefill (M rows of activations times a [N, K] weight matrix), one
// process, alternating, best of several runs each:
//   f32       OpenBLAS sgemm over float32 weights (the reference speed)
//   orca      orca's CpuBackend::Linear over bfloat16 weights, whichever path it takes
//             (printed): oneDNN's products where OneDnnBf16Gemm::Available() and the
//             rows reach kOneDnnBf16MinRows, else float32 arithmetic (panels widened
//             on every core, then sgemm; SmallGemm up to 16 rows); ORCA_CPU_ONEDNN=0
//             forces the float32 one
//   onednn    oneDNN's bf16 x bf16 -> f32 matmul called directly (vdpbf16ps / AMX
//             where the CPU has them), activations rounded to bfloat16 each call
//             (included in the time), weights reordered once into its own layout
// OpenBLAS's sbgemm is not listed: Debian's OpenBLAS is built without it (no
// cblas_sbgemm symbol in libopenblas0 0.3.21).
//
// Built only where oneDNN's headers are installed (Debian's libdnnl-dev). usage:
//   orca-bench-bf16-gemm [--rows 512] [--repeats 5]
// prints one line per shape and writes nothing else; the error of the oneDNN result
// against float64 is printed beside its time.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cpu/onednn_gemm.h"
#include "engine/backend/cpu/simd.h"
#include "engine/common/dtype.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace {

double Seconds(const std::function<void()>& fn, int repeats) {
  fn();  // warm-up
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int rows = 512, repeats = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--rows") == 0) rows = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--repeats") == 0) repeats = std::atoi(argv[i + 1]);
  }
  using orca::DType;
  using orca::Tensor;
  auto backend = orca::CreateCpuBackend(0);
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  const bool onednn_path = orca::OneDnnBf16Gemm::Available() && rows >= orca::kOneDnnBf16MinRows;
  std::printf("CPU simd level %s, rows %d; GFLOP/s (best of %d); orca's bf16 path: %s\n",
              orca::SimdLevelName(orca::CpuSimdLevel()), rows, repeats,
              onednn_path ? "oneDNN bf16 products" : "float32 arithmetic (widened)");
  std::printf("%-28s %10s %10s %10s %16s\n", "shape [N x K]", "f32", "orca", "onednn",
              "onednn max rel err");
  // llama-110m (hidden 768, MLP 2048) and llama-1B (2048, 8192) projections.
  const int shapes[][2] = {{2304, 768},  {4096, 768},   {768, 2048},
                           {6144, 2048}, {16384, 2048}, {2048, 8192}};
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0, 1);
  for (const auto& s : shapes) {
    const int n = s[0], k = s[1], m = rows;
    std::vector<float> x(size_t(m) * k), wf(size_t(n) * k), out(size_t(m) * n);
    std::vector<uint16_t> wb(wf.size());
    for (float& v : x) v = nd(rng);
    for (size_t i = 0; i < wf.size(); ++i) {
      wb[i] = orca::F32ToBf16(nd(rng) * 0.02f);
      wf[i] = orca::Bf16ToF32(wb[i]);  // the same values in both
    }
    const Tensor tx{x.data(), DType::kF32, m, k, 0};
    const Tensor twf{wf.data(), DType::kF32, n, k, 0};
    const Tensor twb{wb.data(), DType::kBF16, n, k, 0};
    const Tensor tout{out.data(), DType::kF32, m, n, 0};
    const double flops = 2.0 * m * n * k;
    const double f32 = Seconds([&] { backend->Linear(tx, twf, nullptr, tout); }, repeats);
    const double orca_bf16 = Seconds([&] { backend->Linear(tx, twb, nullptr, tout); }, repeats);

    // oneDNN: src [m, k] bf16, weights [k, n] bf16 (reordered once into the layout the
    // primitive wants), dst [m, n] f32.
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    dnnl::memory::desc src_md({m, k}, dt::bf16, tag::ab);
    dnnl::memory::desc wei_any({k, n}, dt::bf16, tag::any);
    dnnl::memory::desc wei_user({k, n}, dt::bf16, tag::ba);  // [n, k] row-major = k x n "ba"
    dnnl::memory::desc dst_md({m, n}, dt::f32, tag::ab);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_md, wei_any, dst_md), eng);
    dnnl::memory wei_user_mem(wei_user, eng, wb.data());
    dnnl::memory wei_mem(pd.weights_desc(), eng);
    dnnl::reorder(wei_user_mem, wei_mem).execute(strm, wei_user_mem, wei_mem);
    std::vector<uint16_t> xb(x.size());
    dnnl::memory src_mem(src_md, eng, xb.data());
    std::vector<float> out2(out.size());
    dnnl::memory dst_mem(dst_md, eng, out2.data());
    dnnl::matmul mm(pd);
    const double onednn = Seconds(
        [&] {
          for (size_t i = 0; i < x.size(); ++i) xb[i] = orca::F32ToBf16(x[i]);
          mm.execute(
              strm,
              {{DNNL_ARG_SRC, src_mem}, {DNNL_ARG_WEIGHTS, wei_mem}, {DNNL_ARG_DST, dst_mem}});
          strm.wait();
        },
        repeats);
    double worst = 0;
    for (int r = 0; r < m; r += 61) {
      for (int j = 0; j < n; j += 7) {
        double ref = 0, mag = 0;
        for (int c = 0; c < k; ++c) {
          ref += double(x[size_t(r) * k + c]) * wf[size_t(j) * k + c];
          mag += std::abs(double(x[size_t(r) * k + c]) * wf[size_t(j) * k + c]);
        }
        worst = std::max(worst, std::abs(out2[size_t(r) * n + j] - ref) / mag);
      }
    }
    std::printf("%-28s %10.1f %10.1f %10.1f %16.2e\n",
                (std::to_string(n) + " x " + std::to_string(k)).c_str(), flops / f32 / 1e9,
                flops / orca_bf16 / 1e9, flops / onednn / 1e9, worst);
  }
  return 0;
}
