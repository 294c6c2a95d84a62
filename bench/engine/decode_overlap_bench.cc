// What a decode iteration could gain from overlapping its GEMMs with its attention.
//
// A decode of 16 llama-110m sequences at 512-token contexts runs each layer's GEMMs on
// every core (much arithmetic per weight read), then attention on every core (302 MB of
// float16 K and V read from memory, little arithmetic), one after the other: on two
// cores without SMT the GEMMs leave memory idle part of the time and attention leaves
// the FMAs idle (docs/benchmarks.md sections 20, 21). This benchmark runs the same
// kernels on the same shapes two ways:
//   schedule 0 ("together"): as the engine does, each operation over all 16 rows on the
//     thread pool;
//   schedule 1 ("streams"): one thread per core, each taking its own rows (sequences)
//     through all the layers on its own, so that one core's GEMMs can run while another
//     core's attention reads. Every stream reads every weight: the second read finds a
//     layer's weights (28 MB in float32) in the last-level cache if the streams stay
//     near each other, else memory.
// Both compute the same products; the engine's norms, RoPE and KV writes are left out
// (under 1 ms of a 30-50 ms iteration). weights: 0 float32 (packed_gemm.h), 1 bfloat16
// (packed_gemm_bf16.h, products or widened as the backend chooses).
//
// usage: orca-bench-decode-overlap [google benchmark flags]
//   BM_DecodeIteration/<weights>/<schedule>/<rows>
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "engine/backend/cpu/attention_kernel.h"
#include "engine/backend/cpu/half.h"
#include "engine/backend/cpu/packed_gemm.h"
#include "engine/backend/cpu/packed_gemm_bf16.h"
#include "engine/common/dtype.h"
#include "engine/common/thread_pool.h"

namespace orca {
namespace {

constexpr int kLayers = 12, kDim = 768, kHidden = 2048, kVocab = 32000;
constexpr int kHeads = 12, kHeadDim = 64, kBlock = 16, kContext = 512;
constexpr int kBlocksPerSeq = kContext / kBlock;

ThreadPool& Pool() {
  static ThreadPool pool(0);
  return pool;
}

struct Workspace;

// One linear layer's weight, packed for its type.
struct Linear {
  int n = 0, k = 0;
  std::vector<float> f32;
  std::vector<uint16_t> bf16;
};

// The model's weights and a KV cache of `seqs` sequences, built once per weight type.
struct Model {
  bool bf16 = false;
  std::vector<Linear> linears;  // per layer: qkv, o, gate+up, down; then the LM head
  std::vector<Fp16> kcache, vcache;
  // kblock[(layer * seqs + s) * kBlocksPerSeq + b]: block b of sequence s in `layer`.
  std::vector<const Fp16*> kblock, vblock;
  double weight_bytes = 0, kv_bytes = 0;

  Model(bool bf16_weights, int seqs) : bf16(bf16_weights) {
    std::mt19937 rng(1);
    auto add = [&](int n, int k) {
      // Variance 1/k: each output keeps its input's scale, nothing overflows.
      std::uniform_real_distribution<float> u(-std::sqrt(3.0f / k), std::sqrt(3.0f / k));
      std::vector<float> w(static_cast<size_t>(n) * k);
      for (float& v : w) v = u(rng);
      Linear l;
      l.n = n;
      l.k = k;
      if (bf16) {
        std::vector<uint16_t> raw(w.size());
        for (size_t i = 0; i < w.size(); ++i) raw[i] = F32ToBf16(w[i]);
        l.bf16.resize(PackedWeightBf16Elements(n, k));
        PackWeightsBf16(raw.data(), n, k, l.bf16.data());
        weight_bytes += 2.0 * n * k;
      } else {
        l.f32.resize(PackedWeightFloats(n, k));
        PackWeights(w.data(), n, k, l.f32.data());
        weight_bytes += 4.0 * n * k;
      }
      linears.push_back(std::move(l));
    };
    for (int l = 0; l < kLayers; ++l) {
      add(3 * kDim, kDim);
      add(kDim, kDim);
      add(2 * kHidden, kDim);
      add(kDim, kHidden);
    }
    add(kVocab, kDim);
    // Blocks scattered over the cache as the engine's block pool hands them out.
    const size_t blocks = size_t{kLayers} * seqs * kBlocksPerSeq;
    const size_t block_elems = size_t{kHeads} * kBlock * kHeadDim;
    kcache.resize(blocks * block_elems);
    vcache.resize(blocks * block_elems);
    for (size_t i = 0; i < kcache.size(); ++i) {
      kcache[i].bits = vcache[i].bits =
          static_cast<uint16_t>(0x3000 | (i * 2654435761u >> 22 & 0x3ff));
    }
    std::vector<size_t> order(blocks);
    for (size_t i = 0; i < blocks; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t b = 0; b < blocks; ++b) {
      kblock.push_back(kcache.data() + order[b] * block_elems);
      vblock.push_back(vcache.data() + order[b] * block_elems);
    }
    kv_bytes = 2.0 * sizeof(Fp16) * static_cast<double>(kcache.size());
  }

  void Gemm(int m, const Linear& l, const float* x, float* out, const ParallelForFn& pf) const {
    if (bf16) {
      PackedGemmBf16(m, l.n, l.k, x, l.k, l.bf16.data(), nullptr, out, l.n, pf);
    } else {
      PackedGemm(m, l.n, l.k, x, l.k, l.f32.data(), nullptr, out, l.n, pf);
    }
  }

  // Sequences [s0, s0 + m) of a batch of `seqs` through every layer and the LM head,
  // each operation's tasks handed to pf; ws: Workspace(m), its activations.
  void Decode(int seqs, int s0, int m, const ParallelForFn& pf, Workspace& ws) const;
};

// One stream's activations, allocated (and touched) before the timed loop.
struct Workspace {
  std::vector<float> x, qkv, att, o, gu, logits;
  explicit Workspace(int m)
      : x(static_cast<size_t>(m) * kHidden, 0.5f),
        qkv(static_cast<size_t>(m) * 3 * kDim),
        att(static_cast<size_t>(m) * kDim),
        o(static_cast<size_t>(m) * kDim),
        gu(static_cast<size_t>(m) * 2 * kHidden),
        logits(static_cast<size_t>(m) * kVocab) {}
};

void Model::Decode(int seqs, int s0, int m, const ParallelForFn& pf, Workspace& ws) const {
  std::fill(ws.x.begin(), ws.x.end(), 0.5f);
  for (int l = 0; l < kLayers; ++l) {
    const Linear* w = &linears[static_cast<size_t>(l) * 4];
    Gemm(m, w[0], ws.x.data(), ws.qkv.data(), pf);
    pf(m, [&](int64_t i) {
      thread_local std::vector<float> scratch;
      scratch.resize(size_t{kHeads} * kContext);
      const size_t first = (static_cast<size_t>(l) * seqs + s0 + i) * kBlocksPerSeq;
      DecodeHeads<Fp16> a;
      a.head_dim = kHeadDim;
      a.num_heads = kHeads;
      a.kv_len = kContext;
      a.block_size = kBlock;
      a.kblock = kblock.data() + first;
      a.vblock = vblock.data() + first;
      a.head_stride = int64_t{kBlock} * kHeadDim;
      a.q = ws.qkv.data() + i * 3 * kDim;
      a.scale = 0.125f;
      a.out = ws.att.data() + i * kDim;
      AttendDecodeHeads(a, scratch.data());
    });
    Gemm(m, w[1], ws.att.data(), ws.o.data(), pf);
    Gemm(m, w[2], ws.o.data(), ws.gu.data(), pf);
    // The down projection reads gu's rows as [m, 2048] (as the engine's SiLU-gated half).
    Gemm(m, w[3], ws.gu.data(), ws.x.data(), pf);
  }
  Gemm(m, linears.back(), ws.x.data(), ws.logits.data(), pf);
  benchmark::DoNotOptimize(ws.logits.data());
}

const Model& ModelFor(bool bf16, int seqs) {
  static std::vector<std::unique_ptr<Model>> built;
  for (const auto& m : built) {
    if (m->bf16 == bf16 && static_cast<int>(m->kblock.size()) == kLayers * seqs * kBlocksPerSeq) {
      return *m;
    }
  }
  built.clear();  // one model at a time: each is 0.5-0.8 GB
  built.push_back(std::make_unique<Model>(bf16, seqs));
  return *built.back();
}

void BM_DecodeIteration(benchmark::State& state) {
  const bool bf16 = state.range(0) == 1;
  const bool streams = state.range(1) == 1;
  const int rows = static_cast<int>(state.range(2));
  const Model& model = ModelFor(bf16, rows);
  const int threads = Pool().num_threads();
  const ParallelForFn on_pool = [](int64_t n, const std::function<void(int64_t)>& fn) {
    Pool().ParallelFor(n, fn);
  };
  const ParallelForFn inline_for = [](int64_t n, const std::function<void(int64_t)>& fn) {
    for (int64_t i = 0; i < n; ++i) fn(i);
  };
  std::vector<Workspace> ws;
  for (int t = 0; t < (streams ? threads : 1); ++t) {
    ws.emplace_back(streams ? rows * (t + 1) / threads - rows * t / threads : rows);
  }
  for (auto _ : state) {
    if (!streams) {
      model.Decode(rows, 0, rows, on_pool, ws[0]);
      continue;
    }
    std::vector<std::thread> team;
    for (int t = 0; t < threads; ++t) {
      const int s0 = rows * t / threads, s1 = rows * (t + 1) / threads;
      team.emplace_back([&, t, s0, s1] { model.Decode(rows, s0, s1 - s0, inline_for, ws[t]); });
    }
    for (std::thread& t : team) t.join();
  }
  const double iters = static_cast<double>(state.iterations());
  state.counters["weights_MB"] = model.weight_bytes / 1e6;
  state.counters["kv_MB"] = model.kv_bytes / 1e6;
  // The bytes a decode must read at least, per second: compare with the read probe.
  state.counters["GBs"] = benchmark::Counter((model.weight_bytes + model.kv_bytes) * iters / 1e9,
                                             benchmark::Counter::kIsRate);
  state.SetLabel(std::string(bf16 ? "bf16 " : "f32 ") + (streams ? "streams" : "together"));
}
// Weights outermost: each weight type's model is built once.
BENCHMARK(BM_DecodeIteration)
    ->Args({0, 0, 16})
    ->Args({0, 1, 16})
    ->Args({1, 0, 16})
    ->Args({1, 1, 16})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace orca

BENCHMARK_MAIN();
