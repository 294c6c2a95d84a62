// The CPU backend's attention kernel (AttendOneHead) on each SIMD path this CPU has:
// one head of a decode (one query) or a prefill chunk over a paged float16 cache, the
// keys and values of each 16-token block contiguous and the blocks scattered as the
// pool hands them out. Reports the cached bytes read per second (a decode is bound by
// them: at 512 tokens of context a llama-110m sequence reads 19 MB of K and V per token).
//
// That sequence's 32 blocks stay in the core's cache between iterations, so BM_Attend
// times the kernel's arithmetic. BM_AttendFromMemory times a decode iteration's
// attention as the backend runs it: one task per (sequence, layer, head) unit, on the
// thread pool (every core), each unit's blocks drawn at random from one cache far larger
// than the CPU's caches (a batch of 16 llama-110m sequences at 512 tokens: 2,304 units,
// 302 MB); BM_ReadFromMemory reads the same bytes in order on the same pool, what the
// roofline's bandwidth probe measures (with its loads). Their ratio is how much of the machine's
// bandwidth a decode's attention gets (docs/benchmarks.md sections 14, 15). Its last
// argument, the tokens per block (16 as the engine has them; up to 256), tells whether
// longer contiguous runs would read faster.
//
// usage: orca-bench-attention [google benchmark flags]
//   BM_Attend/<level>/<kv_len>/<q_len>/<head_dim>, level 0 scalar, 1 AVX2, 2 AVX-512,
//     3 AVX-512 with bfloat16 products allowed (AMX tiles where the process has them);
//   BM_AttendFromMemory/<level>/<kv_len>/<units>/<head_dim>/<block tokens>;
//   BM_DecodeHeadsFromMemory/<path>/<kv_len>/<sequence-layer pairs>/<head_dim>/<heads>;
//   BM_ReadFromMemory/<bytes MB>.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>
#include <vector>

#include "bench/engine_sweep/read_probe.h"
#include "engine/backend/backend.h"
#include "engine/backend/cpu/attention_kernel.h"
#include "engine/backend/cpu/packed_gemm_amx.h"
#include "engine/common/dtype.h"
#include "engine/common/thread_pool.h"

namespace orca {
namespace {

constexpr int kBlock = 16;

// krow[j], vrow[j] for tokens [0, kv_len) whose `block`-token blocks are cache's blocks
// blocks[0], blocks[1], ... (each block its keys, then its values, head_dim d).
void ScatteredRows(const Fp16* cache, const size_t* blocks, int kv_len, int d, int block,
                   const Fp16** krow, const Fp16** vrow) {
  for (int j = 0; j < kv_len; ++j) {
    const Fp16* first = cache + blocks[j / block] * 2 * block * d;
    krow[j] = first + (j % block) * d;
    vrow[j] = first + (block + j % block) * d;
  }
}

void BM_Attend(benchmark::State& state) {
  // Level 3: AVX-512 with bfloat16 products allowed (AMX tiles for prefill chunks).
  const bool bf16 = state.range(0) == 3;
  const auto level = bf16 ? SimdLevel::kAvx512 : static_cast<SimdLevel>(state.range(0));
  const AttentionProducts products =
      bf16 ? AttentionProducts::kBf16Allowed : AttentionProducts::kFloat32;
  const int kv_len = static_cast<int>(state.range(1));
  const int q_len = static_cast<int>(state.range(2));
  const int d = static_cast<int>(state.range(3));
  if (level > CpuMaxSimdLevel() || (bf16 && !CpuHasAmxBf16())) {
    state.SkipWithError("this CPU lacks the path");
    return;
  }
  // A pool of blocks far larger than the caches (so reads come from memory, as a batch's
  // many sequences' caches do), this sequence's blocks drawn at random from it.
  const int blocks = (kv_len + kBlock - 1) / kBlock;
  const int pool_blocks = std::max(blocks * 8, 4096);
  std::vector<Fp16> pool(static_cast<size_t>(pool_blocks) * 2 * kBlock * d);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  for (Fp16& v : pool) v.bits = F32ToF16(u(rng));
  std::vector<size_t> order(pool_blocks);
  for (int i = 0; i < pool_blocks; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<const Fp16*> krow(kv_len), vrow(kv_len);
  ScatteredRows(pool.data(), order.data(), kv_len, d, kBlock, krow.data(), vrow.data());
  std::vector<float> q(static_cast<size_t>(q_len) * d), scores(kv_len),
      out(static_cast<size_t>(q_len) * d);
  for (float& v : q) v = u(rng);
  for (auto _ : state) {
    AttendOneHead(d, q_len, kv_len, q.data(), d, krow.data(), vrow.data(), 0.125f, scores.data(),
                  out.data(), d, level, products);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * int64_t{2} * kv_len * d * 2);
  state.SetLabel(bf16 ? "avx512+amx-bf16" : SimdLevelName(level));
}
BENCHMARK(BM_Attend)
    ->ArgsProduct({{0, 1, 2}, {512, 2048}, {1}, {64, 128}})
    ->ArgsProduct({{1, 2, 3}, {512}, {64, 512}, {64}})
    ->Unit(benchmark::kMicrosecond);

ThreadPool& Pool() {
  static ThreadPool pool;  // every core, as the CPU backend's
  return pool;
}

void BM_AttendFromMemory(benchmark::State& state) {
  const auto level = static_cast<SimdLevel>(state.range(0));
  const int kv_len = static_cast<int>(state.range(1));
  const int units = static_cast<int>(state.range(2));
  const int d = static_cast<int>(state.range(3));
  const int block = static_cast<int>(state.range(4));
  if (level > CpuMaxSimdLevel()) {
    state.SkipWithError("this CPU lacks the path");
    return;
  }
  const int unit_blocks = (kv_len + block - 1) / block;
  const size_t blocks = static_cast<size_t>(units) * unit_blocks;
  const size_t block_elems = size_t{2} * block * d;  // a block's keys, then its values
  // Allocated as the CPU backend allocates its KV cache (huge pages where granted).
  auto buffer = CreateCpuBackend(1)->Allocate(blocks * block_elems * sizeof(Fp16));
  if (!buffer.ok()) {
    state.SkipWithError("cannot allocate the cache");
    return;
  }
  Fp16* cache = static_cast<Fp16*>((*buffer)->data());
  for (size_t i = 0; i < blocks * block_elems; ++i) {
    cache[i].bits = static_cast<uint16_t>(0x3000 | (i * 2654435761u >> 22 & 0x3ff));  // 0.125-0.25
  }
  std::vector<size_t> order(blocks);
  for (size_t i = 0; i < blocks; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937(1));
  std::vector<const Fp16*> krow(static_cast<size_t>(units) * kv_len), vrow(krow.size());
  for (size_t u = 0; u < static_cast<size_t>(units); ++u) {
    ScatteredRows(cache, order.data() + u * unit_blocks, kv_len, d, block, krow.data() + u * kv_len,
                  vrow.data() + u * kv_len);
  }
  std::vector<float> q(static_cast<size_t>(units) * d, 0.01f), out(q.size());
  for (auto _ : state) {
    Pool().ParallelFor(units, [&](int64_t u) {
      thread_local std::vector<float> scores;
      scores.resize(kv_len);
      AttendOneHead(d, 1, kv_len, q.data() + u * d, d, krow.data() + u * kv_len,
                    vrow.data() + u * kv_len, 0.125f, scores.data(), out.data() + u * d, d, level);
    });
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * int64_t{units} * kv_len * d * 2 * 2);
  state.SetLabel(SimdLevelName(level));
}
BENCHMARK(BM_AttendFromMemory)
    ->ArgsProduct({{1, 2}, {512}, {2304}, {64}, {16}})
    ->ArgsProduct({{2}, {512}, {2304}, {64}, {32, 64, 128, 256}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The cache as the engine lays it out (KvCacheShape::Offset: a block holds its rows of
// every kv head one after another; keys and values in two caches), `units` (sequence,
// layer) pairs of `heads` heads, blocks drawn at random (llama-110m at batch 16: 192
// pairs of 12 heads, 302 MB): path 0 one task per head (AttendOneHead, as the backend
// ran decodes before AttendDecodeHeads), path 1 one task per pair (AttendDecodeHeads:
// each block's heads read as one stream, what the backend runs now).
void BM_DecodeHeadsFromMemory(benchmark::State& state) {
  const int path = static_cast<int>(state.range(0));
  const int kv_len = static_cast<int>(state.range(1));
  const int units = static_cast<int>(state.range(2));
  const int d = static_cast<int>(state.range(3));
  const int heads = static_cast<int>(state.range(4));
  const int unit_blocks = (kv_len + kBlock - 1) / kBlock;
  const size_t blocks = static_cast<size_t>(units) * unit_blocks;
  const size_t block_elems = static_cast<size_t>(heads) * kBlock * d;
  auto backend = CreateCpuBackend(1);
  auto kbuf = backend->Allocate(blocks * block_elems * sizeof(Fp16));
  auto vbuf = backend->Allocate(blocks * block_elems * sizeof(Fp16));
  if (!kbuf.ok() || !vbuf.ok()) {
    state.SkipWithError("cannot allocate the cache");
    return;
  }
  Fp16* kc = static_cast<Fp16*>((*kbuf)->data());
  Fp16* vc = static_cast<Fp16*>((*vbuf)->data());
  for (size_t i = 0; i < blocks * block_elems; ++i) {
    kc[i].bits = vc[i].bits = static_cast<uint16_t>(0x3000 | (i * 2654435761u >> 22 & 0x3ff));
  }
  std::vector<size_t> order(blocks);
  for (size_t i = 0; i < blocks; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937(1));
  std::vector<const Fp16*> kblock(blocks), vblock(blocks);
  for (size_t b = 0; b < blocks; ++b) {
    kblock[b] = kc + order[b] * block_elems;
    vblock[b] = vc + order[b] * block_elems;
  }
  std::vector<float> q(static_cast<size_t>(units) * heads * d, 0.01f), out(q.size());
  const int64_t head_stride = int64_t{kBlock} * d;
  for (auto _ : state) {
    if (path == 0) {
      Pool().ParallelFor(int64_t{units} * heads, [&](int64_t task) {
        const int64_t u = task / heads, h = task % heads;
        thread_local std::vector<const Fp16*> krow, vrow;
        thread_local std::vector<float> scores;
        krow.resize(kv_len);
        vrow.resize(kv_len);
        scores.resize(kv_len);
        for (int j = 0; j < kv_len; ++j) {
          const size_t b = static_cast<size_t>(u * unit_blocks + j / kBlock);
          krow[j] = kblock[b] + h * head_stride + (j % kBlock) * d;
          vrow[j] = vblock[b] + h * head_stride + (j % kBlock) * d;
        }
        AttendOneHead(d, 1, kv_len, q.data() + task * d, d, krow.data(), vrow.data(), 0.125f,
                      scores.data(), out.data() + task * d, d);
      });
    } else {
      Pool().ParallelFor(units, [&](int64_t u) {
        thread_local std::vector<float> scores;
        scores.resize(static_cast<size_t>(heads) * kv_len);
        DecodeHeads<Fp16> a;
        a.head_dim = d;
        a.num_heads = heads;
        a.kv_len = kv_len;
        a.block_size = kBlock;
        a.kblock = kblock.data() + u * unit_blocks;
        a.vblock = vblock.data() + u * unit_blocks;
        a.head_stride = head_stride;
        a.q = q.data() + u * heads * d;
        a.scale = 0.125f;
        a.out = out.data() + u * heads * d;
        AttendDecodeHeads(a, scores.data());
      });
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * int64_t{units} * heads * kv_len * d * 2 * 2);
  state.SetLabel(path == 0 ? "per head" : "per block");
}
BENCHMARK(BM_DecodeHeadsFromMemory)
    ->ArgsProduct({{0, 1}, {512}, {192}, {64}, {12}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_ReadFromMemory(benchmark::State& state) {
  const size_t words = static_cast<size_t>(state.range(0)) << 20 >> 3;
  std::vector<uint64_t> buf(words, 1);
  constexpr int64_t kChunks = 256;
  std::vector<uint64_t> sums(kChunks);
  const SimdLevel level = CpuSimdLevel();  // the probe's loads: the widest this CPU runs
  for (auto _ : state) {
    Pool().ParallelFor(kChunks, [&](int64_t c) {
      sums[c] = bench::SumWords(buf.data() + c * (words / kChunks), words / kChunks, level);
    });
    benchmark::DoNotOptimize(sums.data());
  }
  state.SetBytesProcessed(state.iterations() * int64_t(words) * 8);
}
BENCHMARK(BM_ReadFromMemory)->Arg(302)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace orca

BENCHMARK_MAIN();
