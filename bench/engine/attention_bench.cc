// The CPU backend's attention kernel (AttendOneHead) on each SIMD path this CPU has:
// one head of a decode (one query) or a prefill chunk over a paged float16 cache, the
// keys and values of each 16-token block contiguous and the blocks scattered as the
// pool hands them out. Reports the cached bytes read per second (a decode is bound by
// them: at 512 tokens of context a llama-110m sequence reads 19 MB of K and V per token).
//
// usage: orca-bench-attention [google benchmark flags]
//   BM_Attend/<level>/<kv_len>/<q_len>/<head_dim>, level 0 scalar, 1 AVX2, 2 AVX-512.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>
#include <vector>

#include "engine/backend/cpu/attention_kernel.h"
#include "engine/common/dtype.h"

namespace orca {
namespace {

constexpr int kBlock = 16;

void BM_Attend(benchmark::State& state) {
  const auto level = static_cast<SimdLevel>(state.range(0));
  const int kv_len = static_cast<int>(state.range(1));
  const int q_len = static_cast<int>(state.range(2));
  const int d = static_cast<int>(state.range(3));
  if (level > CpuMaxSimdLevel()) {
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
  std::vector<int> order(pool_blocks);
  for (int i = 0; i < pool_blocks; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<const Fp16*> krow(kv_len), vrow(kv_len);
  for (int j = 0; j < kv_len; ++j) {
    const Fp16* block = pool.data() + static_cast<size_t>(order[j / kBlock]) * 2 * kBlock * d;
    krow[j] = block + (j % kBlock) * d;
    vrow[j] = block + (kBlock + j % kBlock) * d;
  }
  std::vector<float> q(static_cast<size_t>(q_len) * d), scores(kv_len),
      out(static_cast<size_t>(q_len) * d);
  for (float& v : q) v = u(rng);
  for (auto _ : state) {
    AttendOneHead(d, q_len, kv_len, q.data(), d, krow.data(), vrow.data(), 0.125f, scores.data(),
                  out.data(), d, level);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * int64_t{2} * kv_len * d * 2);
  state.SetLabel(SimdLevelName(level));
}
BENCHMARK(BM_Attend)
    ->ArgsProduct({{0, 1, 2}, {512, 2048}, {1}, {64, 128}})
    ->ArgsProduct({{1, 2}, {512}, {64}, {64}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace orca

BENCHMARK_MAIN();
