// CPU forward-pass throughput of the selective-batching runner on a random
// llama-110m-shaped checkpoint, next to this machine's measured limits:
//   BM_Sgemm       OpenBLAS sgemm GFLOP/s (the FLOP roof)
//   BM_MemBandwidth streaming read bandwidth (the memory roof for decode)
//   BM_Decode/B    one decode iteration of B sequences (context 128 each)
//   BM_Prefill/512 one 512-token prefill iteration
// Each forward benchmark also reports the roofline floors for its work:
// floor_bw_ms (weights streamed once at the measured bandwidth) and floor_flop_ms
// (2 * params * tokens at the measured sgemm rate), and the fraction reached.
//
// usage: orca-bench-cpu-forward [--model DIR] [google benchmark flags]
//   default model: $TMPDIR/orca-bench-llama-110m (written on first use).
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <numeric>
#include <thread>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/common/file_util.h"
#include "engine/kv/kv_block_pool.h"
#include "engine/model/random_checkpoint.h"
#include "engine/runner/model_runner.h"

namespace orca {
namespace {

std::string g_model_dir;
double g_sgemm_gflops = 0;   // measured by BM_Sgemm (runs first)
double g_bandwidth_gbs = 0;  // measured by BM_MemBandwidth

struct Fixture {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<ModelRunner> runner;
  std::unique_ptr<KvBlockPool> pool;
};

Fixture& GetFixture() {
  static Fixture* f = [] {
    auto* fx = new Fixture;
    fx->backend = CreateCpuBackend(0);
    ModelRunnerOptions opts;
    opts.num_kv_blocks = 64 * (1024 / 16) + 64;
    auto r = ModelRunner::Create(g_model_dir, fx->backend.get(), opts);
    if (!r.ok()) {
      std::cerr << "cannot load " << g_model_dir << ": " << r.status() << "\n";
      std::exit(1);
    }
    fx->runner = std::move(*r);
    fx->pool = std::make_unique<KvBlockPool>(fx->runner->num_kv_blocks(), fx->runner->block_size());
    return fx;
  }();
  return *f;
}

void BM_Sgemm(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::vector<float> a(size_t(n) * n, 0.5f), b(size_t(n) * n, 0.25f), c(size_t(n) * n);
  auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
                0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double flops = 2.0 * n * n * n * static_cast<double>(state.iterations());
  state.counters["GFLOPs"] = benchmark::Counter(flops / 1e9, benchmark::Counter::kIsRate);
  g_sgemm_gflops = std::max(g_sgemm_gflops, flops / s / 1e9);  // kept for the floors below
}
BENCHMARK(BM_Sgemm)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();

// Large memcpy on every core (glibc's vectorised, non-temporal copy): bytes read plus
// bytes written per second, the rate at which the forward pass can stream weights.
void BM_MemBandwidth(benchmark::State& state) {
  const size_t n = size_t{256} << 20;  // 256 MiB, far beyond the caches
  std::vector<char> src(n, 1), dst(n, 0);
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    std::vector<std::thread> pool;
    const size_t per = n / threads;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] { std::memcpy(dst.data() + t * per, src.data() + t * per, per); });
    }
    for (auto& t : pool) t.join();
    benchmark::DoNotOptimize(dst.data());
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double bytes = 2.0 * double(n) * static_cast<double>(state.iterations());
  state.counters["GBps"] = benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsRate);
  g_bandwidth_gbs = std::max(g_bandwidth_gbs, bytes / s / 1e9);
}
BENCHMARK(BM_MemBandwidth)->Unit(benchmark::kMillisecond)->UseRealTime();

void ReportFloors(benchmark::State& state, int64_t tokens, double seconds_per_iter) {
  Fixture& fx = GetFixture();
  const ModelConfig& c = fx.runner->config();
  double params = static_cast<double>(CountParameters(c));
  double weight_bytes = static_cast<double>(fx.runner->weight_bytes());
  double floor_bw = g_bandwidth_gbs > 0 ? weight_bytes / (g_bandwidth_gbs * 1e9) : 0;
  double floor_flop = g_sgemm_gflops > 0 ? 2.0 * params * tokens / (g_sgemm_gflops * 1e9) : 0;
  state.counters["tokens_per_s"] = benchmark::Counter(
      static_cast<double>(tokens) * state.iterations(), benchmark::Counter::kIsRate);
  state.counters["floor_bw_ms"] = floor_bw * 1e3;
  state.counters["floor_flop_ms"] = floor_flop * 1e3;
  state.counters["roof_fraction"] = std::max(floor_bw, floor_flop) / seconds_per_iter;
}

// B sequences with `context` cached tokens each, decoding one token per iteration.
void BM_Decode(benchmark::State& state) {
  Fixture& fx = GetFixture();
  const int32_t batch = static_cast<int32_t>(state.range(0));
  const int32_t context = 128;
  std::vector<BlockTable> tables(batch);
  IterationPlan prefill;
  for (int32_t s = 0; s < batch; ++s) {
    if (!tables[s].EnsureCapacity(*fx.pool, context + 1).ok()) {
      state.SkipWithError("KV cache too small");
      return;
    }
    ScheduledSequence seq;
    seq.seq_id = s;
    seq.start_pos = 0;
    seq.token_ids.resize(context);
    for (int32_t i = 0; i < context; ++i) seq.token_ids[i] = (s * 131 + i * 7) % 32000;
    seq.block_table = tables[s].blocks();
    prefill.seqs = {seq};
    if (!fx.runner->Forward(prefill).ok()) state.SkipWithError("prefill failed");
  }
  IterationPlan plan;
  for (int32_t s = 0; s < batch; ++s) {
    ScheduledSequence seq;
    seq.seq_id = s;
    seq.start_pos = context;
    seq.token_ids = {(s * 17) % 32000};
    seq.block_table = tables[s].blocks();
    seq.sample = true;
    seq.sampling.temperature = 0;
    plan.seqs.push_back(seq);
  }
  auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    auto r = fx.runner->Execute(plan);  // rewrites position `context` each time
    benchmark::DoNotOptimize(r);
  }
  double per_iter = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
                    static_cast<double>(state.iterations());
  ReportFloors(state, batch, per_iter);
  for (auto& t : tables) t.Release(*fx.pool);
}
BENCHMARK(BM_Decode)
    ->Arg(1)
    ->Arg(8)
    ->Arg(32)
    ->Arg(64)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_Prefill(benchmark::State& state) {
  Fixture& fx = GetFixture();
  const int32_t n = static_cast<int32_t>(state.range(0));
  BlockTable table;
  if (!table.EnsureCapacity(*fx.pool, n).ok()) {
    state.SkipWithError("KV cache too small");
    return;
  }
  IterationPlan plan;
  ScheduledSequence seq;
  seq.token_ids.resize(n);
  for (int32_t i = 0; i < n; ++i) seq.token_ids[i] = (i * 7919) % 32000;
  seq.block_table = table.blocks();
  seq.sample = true;
  seq.sampling.temperature = 0;
  plan.seqs.push_back(seq);
  auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    auto r = fx.runner->Execute(plan);
    benchmark::DoNotOptimize(r);
  }
  double per_iter = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
                    static_cast<double>(state.iterations());
  ReportFloors(state, n, per_iter);
  table.Release(*fx.pool);
}
BENCHMARK(BM_Prefill)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace orca

int main(int argc, char** argv) {
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--model") == 0 && i + 1 < argc) {
      orca::g_model_dir = argv[++i];
      continue;
    }
    args.push_back(argv[i]);
  }
  if (orca::g_model_dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    orca::g_model_dir = std::string(tmp ? tmp : "/tmp") + "/orca-bench-llama-110m";
    if (!orca::FileExists(orca::g_model_dir + "/config.json")) {
      std::cerr << "writing random llama-110m checkpoint to " << orca::g_model_dir << "\n";
      auto c = orca::PresetConfig("llama-110m");
      auto s = orca::WriteRandomCheckpoint(*c, orca::g_model_dir, 1);
      if (!s.ok()) {
        std::cerr << s << "\n";
        return 1;
      }
    }
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
