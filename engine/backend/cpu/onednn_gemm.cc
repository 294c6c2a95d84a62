#include "engine/backend/cpu/onednn_gemm.h"

#include <cstdlib>
#include <cstring>

#include "engine/common/dtype.h"

#ifdef ORCA_HAVE_ONEDNN
#include <immintrin.h>
#include <omp.h>

#include <map>
#include <utility>
#include <vector>

#include "engine/backend/cpu/simd.h"
#include "oneapi/dnnl/dnnl.hpp"
#endif

namespace orca {

#ifdef ORCA_HAVE_ONEDNN

struct OneDnnBf16Gemm::Impl {
  Impl(dnnl::engine e, int t) : threads(t), engine(std::move(e)), stream(engine) {}

  int threads;
  dnnl::engine engine;
  dnnl::stream stream;
  // By (n, k); null where oneDNN refused the shape (asked once).
  std::map<std::pair<int, int>, std::unique_ptr<dnnl::matmul>> primitives;
  std::vector<uint16_t> x16;  // the activations, rounded

  // The primitive for [*, k] x [n, k]^T, made on first use (rows and row strides are
  // given at run time), or null.
  dnnl::matmul* For(int n, int k) {
    auto [it, added] = primitives.try_emplace({n, k});
    if (!added) return it->second.get();
    using dt = dnnl::memory::data_type;
    const dnnl::memory::dim rt = DNNL_RUNTIME_DIM_VAL;
    const dnnl::memory::desc src({rt, k}, dt::bf16, {rt, 1});
    const dnnl::memory::desc weights({k, n}, dt::bf16, {1, k});  // w's [n, k] rows
    const dnnl::memory::desc dst({rt, n}, dt::f32, {rt, 1});
    try {
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, weights, dst), engine);
      it->second = std::make_unique<dnnl::matmul>(pd);
    } catch (const dnnl::error&) {
    }
    return it->second.get();
  }
};

bool OneDnnBf16Gemm::Available() {
  static const bool available = [] {
    const char* env = std::getenv("ORCA_CPU_ONEDNN");
    if (env != nullptr && std::strcmp(env, "0") == 0) return false;
    return CpuHasBf16Dots();
  }();
  return available;
}

OneDnnBf16Gemm::OneDnnBf16Gemm(int threads) {
  try {
    impl_ = std::make_unique<Impl>(dnnl::engine(dnnl::engine::kind::cpu, 0), threads);
  } catch (const dnnl::error&) {  // Run refuses every shape
  }
}

OneDnnBf16Gemm::~OneDnnBf16Gemm() = default;

bool OneDnnBf16Gemm::Run(int m, int n, int k, const float* x, int64_t ldx, const uint16_t* w,
                         const float* bias, float* out, int64_t ldo) {
  if (impl_ == nullptr) return false;
  dnnl::matmul* mm = impl_->For(n, k);
  if (mm == nullptr) return false;
  std::vector<uint16_t>& x16 = impl_->x16;
  x16.resize(static_cast<size_t>(m) * k);
  for (int r = 0; r < m; ++r) RoundToBf16(x + r * ldx, k, x16.data() + r * k);
  using dt = dnnl::memory::data_type;
  try {
    dnnl::memory src({{m, k}, dt::bf16, {k, 1}}, impl_->engine, x16.data());
    dnnl::memory weights({{k, n}, dt::bf16, {1, k}}, impl_->engine, const_cast<uint16_t*>(w));
    dnnl::memory dst({{m, n}, dt::f32, {ldo, 1}}, impl_->engine, out);
    omp_set_num_threads(impl_->threads);  // this thread's team (the backend's limit)
    mm->execute(impl_->stream,
                {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}});
    impl_->stream.wait();
  } catch (const dnnl::error&) {
    return false;
  }
  if (bias != nullptr) {
    for (int r = 0; r < m; ++r) {
      float* o = out + r * ldo;
      for (int j = 0; j < n; ++j) o[j] += bias[j];
    }
  }
  return true;
}

#else  // no oneDNN in this build

struct OneDnnBf16Gemm::Impl {};
bool OneDnnBf16Gemm::Available() { return false; }
OneDnnBf16Gemm::OneDnnBf16Gemm(int) {}
OneDnnBf16Gemm::~OneDnnBf16Gemm() = default;
bool OneDnnBf16Gemm::Run(int, int, int, const float*, int64_t, const uint16_t*, const float*,
                         float*, int64_t) {
  return false;
}

#endif

}  // namespace orca
