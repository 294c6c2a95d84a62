#include "bench/engine_sweep/bf16_gemm_rate.h"

#include <chrono>
#include <cstdint>
#include <vector>

#include "engine/backend/cpu/simd.h"

#ifdef ORCA_HAVE_ONEDNN
#include <omp.h>

#include "oneapi/dnnl/dnnl.hpp"
#endif

namespace orca::bench {

#ifdef ORCA_HAVE_ONEDNN

double Bf16GemmGflops(int n, double seconds, int threads) {
  if (!CpuHasBf16Dots() || n < 1) return 0;
  using Clock = std::chrono::steady_clock;
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
    auto run = [&] {
      mm.execute(stream,
                 {{DNNL_ARG_SRC, src_m}, {DNNL_ARG_WEIGHTS, packed_w}, {DNNL_ARG_DST, dst_m}});
      stream.wait();
    };
    run();  // warm-up: the thread team, page faults, oneDNN's kernel generation
    int64_t iters = 0;
    const auto t0 = Clock::now();
    double elapsed = 0;
    do {
      run();
      ++iters;
      elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    } while (elapsed < seconds);
    return 2.0 * n * double(n) * n * static_cast<double>(iters) / elapsed / 1e9;
  } catch (const dnnl::error&) {
    return 0;
  }
}

#else  // no oneDNN in this build

double Bf16GemmGflops(int, double, int) { return 0; }

#endif

}  // namespace orca::bench
