// The small-batch decode GEMM (engine/backend/cpu/small_gemm.h) on the weight shapes of
// llama-110m, float32 weights, on each SIMD path this CPU has and on the backend's thread
// pool (every core): GFLOP/s and the weights' bytes per second. A decode batch of 16
// sequences is compute-bound here (16 rows x 2 FLOPs per 4-byte weight), so GFLOP/s
// against `orca-bench-cpu-forward`'s BM_Sgemm rate is the figure that matters; at 1-4
// rows the weights' bytes are.
//
// BM_PackedGemm times engine/backend/cpu/packed_gemm.h (weights packed once, as the CPU
// backend stores float32 linear weights since it has it) from 1 row to prefill-sized
// batches; BM_Sgemm times OpenBLAS's sgemm (sgemv for one row) on the same shapes, the
// row-major paths' choice from 17 rows.
//
// BM_PackedGemmF16 times packed_gemm.h's float16 panels against BM_RowMajorF16 (the
// backend's row-major float16 path up to 16 rows).
//
// BM_PackedGemmBf16 times packed_gemm_bf16.h (bfloat16 weights packed once; bfloat16
// products from 8 rows where the CPU has AVX512_BF16) against BM_RowMajorBf16, the
// backend's row-major bfloat16 paths (SmallGemm below 8 rows, oneDNN from 8 where
// available), on the same shapes.
//
// BM_PackedDecodeLayers times the GEMMs of a whole llama-110m decode iteration, each layer
// on weights of its own (438 MB of float32 or 219 MB of 16-bit ones, streamed from memory as in the
// engine, where the cases above find one shape's weights in the cache after the first run);
// BM_ReadDecodeLayers only reads those weights, in the same tasks: the floor for a decode of a few
// rows.
//
// BM_UnpackPanels times the AVX2 prefill path's conversion of packed float32 panels back
// to row-major rows for sgemm: a row at a time (0) against UnpackWeightRows (1).
//
// usage: orca-bench-small-gemm [google benchmark flags]
//   BM_SmallGemm/<level>/<rows>/<n>/<k>, level 1 AVX2, 2 AVX-512; BM_PackedGemm likewise;
//   BM_Sgemm/0/<rows>/<n>/<k>; BM_PackedGemmBf16/2/... and BM_RowMajorBf16/2/... ;
//   BM_PackedDecodeLayers/<level>/<rows>/<dtype>; BM_ReadDecodeLayers;
//   BM_UnpackPanels/<whole>/<n>/<k>.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <random>
#include <thread>
#include <vector>

#include "bench/engine_sweep/read_probe.h"
#include "engine/backend/cpu/onednn_gemm.h"
#include "engine/backend/cpu/packed_gemm.h"
#include "engine/backend/cpu/packed_gemm_bf16.h"
#include "engine/backend/cpu/small_gemm.h"
#include "engine/common/thread_pool.h"

namespace orca {
namespace {

// One case's operands, [rows, k] x [n, k]^T (args 1-3), random; after the timed loop,
// Report sets the rates.
struct Gemm {
  explicit Gemm(const benchmark::State& state)
      : m(static_cast<int>(state.range(1))),
        n(static_cast<int>(state.range(2))),
        k(static_cast<int>(state.range(3))),
        x(static_cast<size_t>(m) * k),
        w(static_cast<size_t>(n) * k),
        out(static_cast<size_t>(m) * n) {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1, 1);
    for (float& v : x) v = u(rng);
    for (float& v : w) v = u(rng);
  }
  void Report(benchmark::State& state, double bytes_per_weight = 4.0) const {
    const double iters = static_cast<double>(state.iterations());
    state.counters["GFLOPs"] =
        benchmark::Counter(2.0 * m * n * k * iters / 1e9, benchmark::Counter::kIsRate);
    state.counters["weight_GBs"] =
        benchmark::Counter(bytes_per_weight * n * k * iters / 1e9, benchmark::Counter::kIsRate);
  }
  // w as float16 bits.
  std::vector<uint16_t> F16Weights() const {
    std::vector<uint16_t> w16(w.size());
    for (size_t i = 0; i < w.size(); ++i) w16[i] = F32ToF16(w[i]);
    return w16;
  }
  // w as bfloat16 bits.
  std::vector<uint16_t> Bf16Weights() const {
    std::vector<uint16_t> w16(w.size());
    for (size_t i = 0; i < w.size(); ++i) w16[i] = F32ToBf16(w[i]);
    return w16;
  }
  int m, n, k;
  std::vector<float> x, w, out;
};

// The backend's thread pool (every core), as SmallGemm and PackedGemm take it.
const ParallelForFn& PoolParallelFor() {
  static ThreadPool pool;
  static const ParallelForFn parallel_for =
      [](int64_t tasks, const std::function<void(int64_t)>& fn) { pool.ParallelFor(tasks, fn); };
  return parallel_for;
}

// Whether the case's SIMD level (arg 0) runs here; skips the case if not.
bool LevelRunsHere(benchmark::State& state) {
  if (static_cast<SimdLevel>(state.range(0)) <= CpuMaxSimdLevel()) return true;
  state.SkipWithError("this CPU lacks the path");
  return false;
}

void BM_SmallGemm(benchmark::State& state) {
  if (!LevelRunsHere(state)) return;
  const auto level = static_cast<SimdLevel>(state.range(0));
  const ParallelForFn& parallel_for = PoolParallelFor();
  Gemm g(state);
  for (auto _ : state) {
    SmallGemm(g.m, g.n, g.k, g.x.data(), g.k, g.w.data(), nullptr, g.out.data(), g.n, parallel_for,
              level);
    benchmark::DoNotOptimize(g.out.data());
  }
  g.Report(state);
}

void BM_PackedGemm(benchmark::State& state) {
  if (!LevelRunsHere(state)) return;
  const auto level = static_cast<SimdLevel>(state.range(0));
  Gemm g(state);
  std::vector<float> packed(PackedWeightFloats(g.n, g.k));
  PackWeights(g.w.data(), g.n, g.k, packed.data());
  for (auto _ : state) {
    PackedGemm(g.m, g.n, g.k, g.x.data(), g.k, packed.data(), nullptr, g.out.data(), g.n,
               PoolParallelFor(), level);
    benchmark::DoNotOptimize(g.out.data());
  }
  g.Report(state);
}

// The weights of one decode iteration of llama-110m, in the engine's order: each of 12
// layers' qkv, o, gate+up and down on weights of their own, then the LM head, packed as
// the CPU backend packs them (438 MB in float32, half in 16 bits), so they stream from
// memory as a decode's do (the single-shape cases above find theirs in the cache). Built
// once per weight type for every case that reads them.
struct DecodeLayers {
  struct Shape {
    int n, k;
  };
  // 0 float32, 1 float16, 2 bfloat16.
  static const DecodeLayers& Get(int dtype) {
    if (dtype == 0) {
      static const DecodeLayers f32(0);
      return f32;
    }
    if (dtype == 1) {
      static const DecodeLayers f16(1);
      return f16;
    }
    static const DecodeLayers bf16(2);
    return bf16;
  }
  std::vector<Shape> shapes;
  std::vector<std::vector<float>> packed;       // float32
  std::vector<std::vector<uint16_t>> packed16;  // float16 or bfloat16
  double weight_bytes = 0, flops_per_row = 0;

 private:
  explicit DecodeLayers(int dtype) {
    constexpr int kLayers = 12, kDim = 768, kHidden = 2048, kVocab = 32000;
    for (int l = 0; l < kLayers; ++l) {
      for (Shape s : {Shape{3 * kDim, kDim}, Shape{kDim, kDim}, Shape{2 * kHidden, kDim},
                      Shape{kDim, kHidden}}) {
        shapes.push_back(s);
      }
    }
    shapes.push_back({kVocab, kDim});
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1, 1);
    for (const Shape& s : shapes) {
      flops_per_row += 2.0 * s.n * s.k;
      weight_bytes += (dtype == 0 ? 4.0 : 2.0) * s.n * s.k;
      if (dtype == 0) {  // random values straight into the packed form
        packed.emplace_back(PackedWeightFloats(s.n, s.k));
        for (float& v : packed.back()) v = u(rng);
        continue;
      }
      std::vector<uint16_t> w(static_cast<size_t>(s.n) * s.k);
      for (uint16_t& v : w) v = dtype == 1 ? F32ToF16(u(rng)) : F32ToBf16(u(rng));
      if (dtype == 1) {
        packed16.emplace_back(PackedWeightFloats(s.n, s.k));
        PackWeightsF16(w.data(), s.n, s.k, packed16.back().data());
      } else {
        packed16.emplace_back(PackedWeightBf16Elements(s.n, s.k));
        PackWeightsBf16(w.data(), s.n, s.k, packed16.back().data());
      }
    }
  }
};

void ReportDecodeLayers(benchmark::State& state, double flops, double bytes) {
  const double iters = static_cast<double>(state.iterations());
  if (flops > 0) {
    state.counters["GFLOPs"] = benchmark::Counter(flops * iters / 1e9, benchmark::Counter::kIsRate);
  }
  state.counters["weight_GBs"] =
      benchmark::Counter(bytes * iters / 1e9, benchmark::Counter::kIsRate);
}

// The GEMMs of one decode iteration on DecodeLayers' weights. Args: level, rows, weight
// type (0 float32, 1 float16, 2 bfloat16; bfloat16 products off, as on AVX2).
void BM_PackedDecodeLayers(benchmark::State& state) {
  if (!LevelRunsHere(state)) return;
  const auto level = static_cast<SimdLevel>(state.range(0));
  const int m = static_cast<int>(state.range(1));
  const int dtype = static_cast<int>(state.range(2));
  const DecodeLayers& layers = DecodeLayers::Get(dtype);
  std::vector<float> x(static_cast<size_t>(m) * 2048), out(static_cast<size_t>(m) * 32000);
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> u(-1, 1);
  for (float& v : x) v = u(rng);
  for (auto _ : state) {
    for (size_t i = 0; i < layers.shapes.size(); ++i) {
      const auto [n, k] = layers.shapes[i];
      if (dtype == 0) {
        PackedGemm(m, n, k, x.data(), k, layers.packed[i].data(), nullptr, out.data(), n,
                   PoolParallelFor(), level);
      } else if (dtype == 1) {
        PackedGemmF16(m, n, k, x.data(), k, layers.packed16[i].data(), nullptr, out.data(), n,
                      PoolParallelFor(), level);
      } else {
        PackedGemmBf16(m, n, k, x.data(), k, layers.packed16[i].data(), nullptr, out.data(), n,
                       PoolParallelFor(), level, Bf16Products::kOff);
      }
    }
    benchmark::DoNotOptimize(out.data());
  }
  ReportDecodeLayers(state, m * layers.flops_per_row, layers.weight_bytes);
}
BENCHMARK(BM_PackedDecodeLayers)
    ->ArgsProduct({{1, 2}, {1, 2, 4, 6, 8, 16}, {0, 1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The same weights read by the same tasks (one per panel pair, PackedGemm's) and merely
// summed with the roofline probe's loads: how fast this access pattern (49 loops in a
// row on the pool, each thread's pairs claimed one by one) reads, the floor for
// BM_PackedDecodeLayers at few rows.
void BM_ReadDecodeLayers(benchmark::State& state) {
  const DecodeLayers& layers = DecodeLayers::Get(0);
  const SimdLevel level = CpuSimdLevel();
  std::vector<uint64_t> sinks(64 * 8);  // a cache line per task slot
  for (auto _ : state) {
    for (size_t i = 0; i < layers.shapes.size(); ++i) {
      const auto [n, k] = layers.shapes[i];
      const int64_t pair_words = int64_t{2 * kPanelRows} * k * sizeof(float) / sizeof(uint64_t);
      const auto* words = reinterpret_cast<const uint64_t*>(layers.packed[i].data());
      PoolParallelFor()((n + 2 * kPanelRows - 1) / (2 * kPanelRows), [&](int64_t q) {
        sinks[q % 64 * 8] += bench::SumWords(words + q * pair_words, pair_words, level);
      });
    }
    benchmark::DoNotOptimize(sinks.data());
  }
  ReportDecodeLayers(state, 0, layers.weight_bytes);
}
BENCHMARK(BM_ReadDecodeLayers)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_PackedGemmBf16(benchmark::State& state) {
  if (!LevelRunsHere(state)) return;
  const auto level = static_cast<SimdLevel>(state.range(0));
  Gemm g(state);
  std::vector<uint16_t> packed(PackedWeightBf16Elements(g.n, g.k));
  PackWeightsBf16(g.Bf16Weights().data(), g.n, g.k, packed.data());
  for (auto _ : state) {
    PackedGemmBf16(g.m, g.n, g.k, g.x.data(), g.k, packed.data(), nullptr, g.out.data(), g.n,
                   PoolParallelFor(), level);
    benchmark::DoNotOptimize(g.out.data());
  }
  g.Report(state, 2.0);
  if (PackedGemmBf16RoundsActivations(g.m, level)) {
    state.SetLabel(std::string("bf16 products by ") +
                   Bf16ProductsName(PackedGemmBf16Products(g.m, level)));
  }
}

void BM_PackedGemmF16(benchmark::State& state) {
  if (!LevelRunsHere(state)) return;
  const auto level = static_cast<SimdLevel>(state.range(0));
  Gemm g(state);
  const std::vector<uint16_t> w16 = g.F16Weights();
  std::vector<uint16_t> packed(PackedWeightFloats(g.n, g.k));
  PackWeightsF16(w16.data(), g.n, g.k, packed.data());
  for (auto _ : state) {
    PackedGemmF16(g.m, g.n, g.k, g.x.data(), g.k, packed.data(), nullptr, g.out.data(), g.n,
                  PoolParallelFor(), level);
    benchmark::DoNotOptimize(g.out.data());
  }
  g.Report(state, 2.0);
}

// The backend's row-major float16 path up to 16 rows (SmallGemm, widening in registers).
void BM_RowMajorF16(benchmark::State& state) {
  if (!LevelRunsHere(state)) return;
  const auto level = static_cast<SimdLevel>(state.range(0));
  Gemm g(state);
  if (g.m > kSmallGemmMaxRows) {
    state.SkipWithError("row-major float16 takes sgemm over widened panels beyond this");
    return;
  }
  const std::vector<uint16_t> w16 = g.F16Weights();
  for (auto _ : state) {
    SmallGemm(g.m, g.n, g.k, g.x.data(), g.k, reinterpret_cast<const Fp16*>(w16.data()), nullptr,
              g.out.data(), g.n, PoolParallelFor(), level);
    benchmark::DoNotOptimize(g.out.data());
  }
  g.Report(state, 2.0);
}

void BM_RowMajorBf16(benchmark::State& state) {
  if (!LevelRunsHere(state)) return;
  const auto level = static_cast<SimdLevel>(state.range(0));
  Gemm g(state);
  const std::vector<uint16_t> w16 = g.Bf16Weights();
  static OneDnnBf16Gemm* onednn =
      OneDnnBf16Gemm::Available()
          ? new OneDnnBf16Gemm(static_cast<int>(std::thread::hardware_concurrency()))
          : nullptr;
  const bool use_onednn = onednn != nullptr && g.m >= kOneDnnBf16MinRows;
  if (!use_onednn && g.m > kSmallGemmMaxRows) {
    state.SkipWithError("no row-major bfloat16 path for these rows here");
    return;
  }
  for (auto _ : state) {
    if (use_onednn) {
      onednn->Run(g.m, g.n, g.k, g.x.data(), g.k, w16.data(), nullptr, g.out.data(), g.n);
    } else {
      SmallGemm(g.m, g.n, g.k, g.x.data(), g.k, reinterpret_cast<const Bf16*>(w16.data()), nullptr,
                g.out.data(), g.n, PoolParallelFor(), level);
    }
    benchmark::DoNotOptimize(g.out.data());
  }
  g.Report(state, 2.0);
}

void BM_Sgemm(benchmark::State& state) {
  Gemm g(state);
  for (auto _ : state) {
    if (g.m == 1) {
      cblas_sgemv(CblasRowMajor, CblasNoTrans, g.n, g.k, 1.0f, g.w.data(), g.k, g.x.data(), 1, 0.0f,
                  g.out.data(), 1);
      continue;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, g.m, g.n, g.k, 1.0f, g.x.data(), g.k,
                g.w.data(), g.k, 0.0f, g.out.data(), g.n);
    benchmark::DoNotOptimize(g.out.data());
  }
  g.Report(state);
}

// llama-110m's GEMMs: qkv, o, gate+up, down, LM head.
void Shapes(benchmark::internal::Benchmark* b) {
  for (int level : {1, 2}) {
    for (int rows : {4, 8, 16, 24, 32}) {
      for (auto [n, k] :
           {std::pair{2304, 768}, {768, 768}, {4096, 768}, {768, 2048}, {32000, 768}}) {
        b->Args({level, rows, n, k});
      }
    }
  }
}
BENCHMARK(BM_SmallGemm)->Apply(Shapes)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Rows: one sequence's decode, decode batches, a prefill chunk.
constexpr int kPackedRows[] = {1, 4, 8, 16, 24, 32, 64, 128, 512};

void PackedShapes(benchmark::internal::Benchmark* b) {
  for (int level : {1, 2}) {
    for (int rows : kPackedRows) {
      for (auto [n, k] :
           {std::pair{2304, 768}, {768, 768}, {4096, 768}, {768, 2048}, {32000, 768}}) {
        b->Args({level, rows, n, k});
      }
    }
  }
}
BENCHMARK(BM_PackedGemm)->Apply(PackedShapes)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_PackedGemmBf16)->Apply(PackedShapes)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_RowMajorBf16)->Apply(PackedShapes)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_PackedGemmF16)->Apply(PackedShapes)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_RowMajorF16)->Apply(PackedShapes)->Unit(benchmark::kMicrosecond)->UseRealTime();

// The AVX2 prefill path's conversion (WidenedGemm): a float32 weight's panels back to
// row-major rows, one row at a time (0) or a panel at a time (1, UnpackWeightRows), on
// one thread; bytes: the weight read once and written once.
void BM_UnpackPanels(benchmark::State& state) {
  const bool whole = state.range(0) != 0;
  const int n = static_cast<int>(state.range(1)), k = static_cast<int>(state.range(2));
  std::vector<float> w(static_cast<size_t>(n) * k), packed(PackedWeightFloats(n, k)),
      rows(w.size());
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 1013);
  PackWeights(w.data(), n, k, packed.data());
  for (auto _ : state) {
    if (whole) {
      UnpackWeightRows(packed.data(), k, 0, n, rows.data());
    } else {
      for (int j = 0; j < n; ++j)
        UnpackWeightRow(packed.data(), k, j, rows.data() + int64_t{j} * k);
    }
    benchmark::DoNotOptimize(rows.data());
  }
  state.SetBytesProcessed(state.iterations() * int64_t{n} * k * 8);
  state.SetLabel(whole ? "panels" : "rows");
}
BENCHMARK(BM_UnpackPanels)
    ->ArgsProduct({{0, 1}, {2048}, {768}})
    ->ArgsProduct({{0, 1}, {768}, {2048}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

void SgemmShapes(benchmark::internal::Benchmark* b) {
  for (int rows : kPackedRows) {
    for (auto [n, k] : {std::pair{2304, 768}, {768, 768}, {4096, 768}, {768, 2048}, {32000, 768}}) {
      b->Args({0, rows, n, k});
    }
  }
}
BENCHMARK(BM_Sgemm)->Apply(SgemmShapes)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace orca

BENCHMARK_MAIN();
