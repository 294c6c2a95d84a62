// Host sampler cost per row (SampleToken) next to the textbook full-sort sampler
// (tests/engine/runner/sampler_reference.h) on the same logits, and a batch of rows
// sampled on 1 and 2+ threads (ThreadPool, as ModelRunner::Execute does).
//   BM_Sample/<knobs>/<vocab>        orca's sampler
//   BM_FullSort/<knobs>/<vocab>      every token sorted first (the old sampler's way
//                                    for top-p, min-p and plain temperature)
//   BM_Batch/<rows>/<threads>        rows x 128256 at temperature 0.8, top-p 0.95
//   BM_Penalties/<history>           presence + frequency + repetition penalties
// Knobs: 0 greedy, 1 temperature 0.8, 2 top-p 0.9, 3 top-k 50, 4 min-p 0.05,
// 5 top-k 50 + top-p 0.9. Logits: N(0, 3) per token, a harder case than a real model's
// peaked rows: the top-p 0.9 nucleus holds 515 tokens of 32000 and 1702 of 128256.
//
// usage: orca-bench-sampler [google benchmark flags, e.g. --benchmark_out=s.json
//        --benchmark_out_format=json]; plot: /usr/bin/python3 bench/sampler/plot.py s.json s.png
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "engine/common/thread_pool.h"
#include "engine/runner/sampler.h"
#include "tests/engine/runner/sampler_reference.h"

namespace orca {
namespace {

std::vector<float> Logits(int32_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> v(static_cast<size_t>(vocab));
  for (float& x : v) x = normal(rng);
  return v;
}

SamplingParams Knobs(int64_t which) {
  SamplingParams p;
  p.temperature = 0.8f;
  p.seed = 1;
  switch (which) {
    case 0:
      p.temperature = 0;
      break;
    case 2:
      p.top_p = 0.9f;
      break;
    case 3:
      p.top_k = 50;
      break;
    case 4:
      p.min_p = 0.05f;
      break;
    case 5:
      p.top_k = 50;
      p.top_p = 0.9f;
      break;
    default:
      break;
  }
  return p;
}

void BM_Sample(benchmark::State& state) {
  const std::vector<float> logits = Logits(static_cast<int32_t>(state.range(1)), 3);
  ScheduledSequence seq;
  seq.sampling = Knobs(state.range(0));
  std::vector<float> row(logits.size());
  for (auto _ : state) {
    row = logits;  // the sampler edits its row in place
    benchmark::DoNotOptimize(SampleToken(absl::MakeSpan(row), seq).token_id);
    ++seq.output_index;
  }
}

void BM_FullSort(benchmark::State& state) {
  const std::vector<float> logits = Logits(static_cast<int32_t>(state.range(1)), 3);
  SamplingParams p = Knobs(state.range(0));
  if (p.greedy()) p.temperature = 1e-6f;  // the full sort of a near-greedy draw
  std::vector<float> row(logits.size());
  uint64_t index = 0;
  for (auto _ : state) {
    row = logits;
    benchmark::DoNotOptimize(
        orca::testing::FullSortReference(row, p, SeededUniform(p.seed, index++)));
  }
}

void BM_Batch(benchmark::State& state) {
  const int64_t rows = state.range(0);
  const int32_t vocab = 128256;
  ThreadPool pool(static_cast<int>(state.range(1)));
  const std::vector<float> one = Logits(vocab, 5);
  std::vector<float> logits(static_cast<size_t>(rows) * vocab);
  std::vector<ScheduledSequence> seqs(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    seqs[r].sampling.temperature = 0.8f;
    seqs[r].sampling.top_p = 0.95f;
    seqs[r].sampling.seed = static_cast<uint64_t>(r);
  }
  std::vector<int32_t> tokens(static_cast<size_t>(rows));
  for (auto _ : state) {
    state.PauseTiming();
    for (int64_t r = 0; r < rows; ++r) std::copy(one.begin(), one.end(), &logits[r * vocab]);
    state.ResumeTiming();
    pool.ParallelFor(rows, [&](int64_t r) {
      tokens[r] = SampleToken(absl::MakeSpan(&logits[r * vocab], vocab), seqs[r]).token_id;
    });
  }
  state.counters["rows_per_s"] =
      benchmark::Counter(static_cast<double>(rows), benchmark::Counter::kIsIterationInvariantRate);
}

// Presence, frequency and repetition penalties over a history of range(0) tokens (a
// quarter of them the prompt) drawn from 4,000 distinct ones, temperature 0.8, 32,000
// tokens: the logit edits SampleToken applies before its draw.
void BM_Penalties(benchmark::State& state) {
  const std::vector<float> logits = Logits(32000, 3);
  ScheduledSequence seq;
  seq.sampling = Knobs(1);
  seq.sampling.presence_penalty = 0.3f;
  seq.sampling.frequency_penalty = 0.5f;
  seq.sampling.repetition_penalty = 1.1f;
  std::mt19937 rng(9);
  std::uniform_int_distribution<int32_t> token(0, 3999);
  for (int64_t i = 0; i < state.range(0); ++i) seq.penalty_history.push_back(token(rng) * 7);
  seq.penalty_prompt_len = static_cast<int32_t>(state.range(0) / 4);
  std::vector<float> row(logits.size());
  for (auto _ : state) {
    row = logits;
    benchmark::DoNotOptimize(SampleToken(absl::MakeSpan(row), seq).token_id);
    ++seq.output_index;
  }
}

void Vocabularies(benchmark::internal::Benchmark* b) {
  for (int64_t knobs = 0; knobs <= 5; ++knobs) {
    for (int64_t vocab : {32000, 128256}) b->Args({knobs, vocab});
  }
  b->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_Sample)->Apply(Vocabularies);
BENCHMARK(BM_FullSort)->Apply(Vocabularies);
BENCHMARK(BM_Penalties)->Arg(256)->Arg(2048)->Arg(8192)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Batch)->Args({64, 1})->Args({64, 2})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace orca

BENCHMARK_MAIN();
