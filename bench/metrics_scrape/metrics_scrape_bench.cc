// What one scrape of the scheduler's /metrics costs: ServingMetrics::Scrape (the
// engine snapshot, the group status, every family rendered as text) on a real engine
// on stories260K whose histograms hold a long run's observations.
//   BM_Scrape                      one page, the engine idle (page_bytes: its size)
//   BM_EngineLoopUnderScraper/I    the engine loop's rate with a scraper every I us
//                                  (-1: none, 50000: 50 ms, 0: back to back)
//
// usage: orca-bench-metrics-scrape [--model DIR] [google benchmark flags]
//   default model: models/stories260K under the working directory.
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "engine/core/engine.h"
#include "engine/server/serving_metrics.h"

namespace orca {
namespace {

std::string g_model_dir = "models/stories260K";

std::unique_ptr<Engine> MakeEngine() {
  EngineOptions eo;
  eo.model.dir = g_model_dir;
  eo.device.threads = 1;
  eo.kv_cache.num_blocks = 1024;
  auto engine = Engine::Create(eo);
  if (!engine.ok()) {
    std::cerr << "cannot load " << g_model_dir << ": " << engine.status() << "\n";
    std::exit(1);
  }
  return std::move(*engine);
}

// Fills every histogram as a long run would (values spread over the buckets).
void Observe(ServingMetrics& m, int n) {
  for (int i = 0; i < n; ++i) {
    const double x = 1e-4 * (1 + i % 997);
    m.OnIteration(x, x / 10, 1 + i % 64, 1 + i % 512, 1);
    m.OnFirstToken(x * 10, x);
    m.OnToken(x);
    m.OnFinished(i % 3 ? FinishReason::kLength : FinishReason::kStop, 1 + i % 300, 1 + i % 200,
                 x * 100);
  }
}

const KvCacheInfo kCache{16, 1024, "float32", true};

void BM_Scrape(benchmark::State& state) {
  auto engine = MakeEngine();
  ServingMetrics m("stories260K", kCache);
  Observe(m, 100000);
  size_t bytes = 0;
  for (auto _ : state) {
    std::string page = m.Scrape(*engine, true);
    bytes = page.size();
    benchmark::DoNotOptimize(page);
  }
  state.counters["page_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_Scrape)->Unit(benchmark::kMicrosecond);

// The engine loop's rate while a scraper thread renders the page every
// state.range(0) microseconds (-1: no scraper; 0: back to back), over 3 s of
// generation (64 streams, batch of 64). Reports engine_iterations_per_s, tokens_per_s
// and the scrapes done; compare the rows for the slowdown a scraper causes.
void BM_EngineLoopUnderScraper(benchmark::State& state) {
  const int64_t interval_us = state.range(0);
  for (auto _ : state) {
    auto engine = MakeEngine();
    ServingMetrics m("stories260K", kCache);
    engine->SetObserver(&m);
    for (int i = 0; i < 64; ++i) {
      GenerateParams p;
      p.prompt_tokens = engine->tokenizer().Encode("Once upon a time", true);
      p.max_tokens = 480;
      p.ignore_eos = true;
      if (!engine->Submit(std::move(p)).ok()) std::exit(1);
    }
    std::atomic<bool> stop{false};
    std::atomic<int64_t> scrapes{0};
    std::thread scraper([&] {
      if (interval_us < 0) return;
      while (!stop.load()) {
        benchmark::DoNotOptimize(m.Scrape(*engine, true));
        ++scrapes;
        if (interval_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(interval_us));
      }
    });
    engine->Start();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // past the prefills
    const EngineSnapshot a = engine->Snapshot();
    const auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::seconds(3));
    const EngineSnapshot b = engine->Snapshot();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    stop = true;
    scraper.join();
    engine->Stop();
    state.SetIterationTime(s);
    state.counters["engine_iterations_per_s"] =
        static_cast<double>(b.iterations - a.iterations) / s;
    state.counters["tokens_per_s"] =
        static_cast<double>(b.generated_tokens - a.generated_tokens) / s;
    state.counters["scrapes"] = static_cast<double>(scrapes.load());
  }
}
BENCHMARK(BM_EngineLoopUnderScraper)
    ->Arg(-1)
    ->Arg(50000)
    ->Arg(0)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace orca

int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--model") == 0) {
      orca::g_model_dir = argv[i + 1];
      for (int j = i; j + 2 < argc + 0; ++j) argv[j] = argv[j + 2];
      argc -= 2;
      break;
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
