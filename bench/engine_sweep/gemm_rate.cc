#include "bench/engine_sweep/gemm_rate.h"

#include <cblas.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "engine/backend/cpu/simd.h"

#ifdef ORCA_HAVE_ONEDNN
#include <omp.h>

#include "oneapi/dnnl/dnnl.hpp"
#endif

namespace orca::bench {

double GflopsOfRuns(int n, double seconds, const std::function<void()>& run) {
  using Clock = std::chrono::steady_clock;
  run();  // warm-up
  int64_t calls = 0;
  const auto t0 = Clock::now();
  double elapsed = 0;
  do {
    run();
    ++calls;
    elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  } while (elapsed < seconds);
  return elapsed > 0 ? 2.0 * n * double(n) * n * static_cast<double>(calls) / elapsed / 1e9 : 0;
}

double SgemmGflops(int n, double seconds) {
  std::vector<float> a(size_t(n) * n, 0.5f), b(size_t(n) * n, 0.25f), c(size_t(n) * n);
  return GflopsOfRuns(n, seconds, [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
                0.0f, c.data(), n);
  });
}

#ifdef ORCA_HAVE_ONEDNN

double Bf16GemmGflops(int n, double seconds, int threads) {
  if (!CpuHasBf16Dots() || n < 1) return 0;
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const dnnl::memory::dim d = n;
  // 0.5 and 0.25 in bfloat16: the sums stay exact, nothing denormal.
  std::vector<uint16_t> x(size_t(n) * n, 0x3f00), w(size_t(n) * n, 0x3e80);
  std::vector<float> out(size_t(n) * n);
  if (threads > 0) omp_set_num_threads(threads);
  try {
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(engine);
    const dnnl::memory::desc src({d, d}, dt::bf16, tag::ab);
    const dnnl::memory::desc any_weights({d, d}, dt::bf16, tag::any);
    const dnnl::memory::desc dst({d, d}, dt::f32, tag::ab);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, any_weights, dst), engine);
    dnnl::memory user_w({{d, d}, dt::bf16, tag::ba}, engine, w.data());
    dnnl::memory packed_w(pd.weights_desc(), engine);
    dnnl::reorder(user_w, packed_w).execute(stream, user_w, packed_w);
    dnnl::memory src_m(src, engine, x.data()), dst_m(dst, engine, out.data());
    dnnl::matmul mm(pd);
    return GflopsOfRuns(n, seconds, [&] {
      mm.execute(stream,
                 {{DNNL_ARG_SRC, src_m}, {DNNL_ARG_WEIGHTS, packed_w}, {DNNL_ARG_DST, dst_m}});
      stream.wait();
    });
  } catch (const dnnl::error&) {
    return 0;
  }
}

#else  // no oneDNN in this build

double Bf16GemmGflops(int, double, int) { return 0; }

#endif

}  // namespace orca::bench
