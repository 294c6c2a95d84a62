#include "bench/engine_sweep/read_probe.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <numeric>
#include <thread>
#include <vector>

namespace orca::bench {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

uint64_t SumScalar(const uint64_t* p, size_t n) {
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += p[i];
    s1 += p[i + 1];
    s2 += p[i + 2];
    s3 += p[i + 3];
  }
  for (; i < n; ++i) s0 += p[i];
  return s0 + s1 + s2 + s3;
}

// Four independent accumulators per width so that the adds never wait on each other.
__attribute__((target("avx2"))) uint64_t SumAvx2(const uint64_t* p, size_t n) {
  __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    a = _mm256_add_epi64(a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
    b = _mm256_add_epi64(b, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 4)));
    c = _mm256_add_epi64(c, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 8)));
    d = _mm256_add_epi64(d, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 12)));
  }
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes),
                     _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(c, d)));
  return SumScalar(lanes, 4) + SumScalar(p + i, n - i);
}

ORCA_AVX512 uint64_t SumAvx512(const uint64_t* p, size_t n) {
  __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a = _mm512_add_epi64(a, _mm512_loadu_si512(p + i));
    b = _mm512_add_epi64(b, _mm512_loadu_si512(p + i + 8));
    c = _mm512_add_epi64(c, _mm512_loadu_si512(p + i + 16));
    d = _mm512_add_epi64(d, _mm512_loadu_si512(p + i + 24));
  }
  alignas(64) uint64_t lanes[8];  // (GCC 12's _mm512_reduce_add_epi64 trips -Wuninitialized)
  _mm512_store_si512(lanes, _mm512_add_epi64(_mm512_add_epi64(a, b), _mm512_add_epi64(c, d)));
  return SumScalar(lanes, 8) + SumScalar(p + i, n - i);
}

}  // namespace

size_t ReadProbeBytes(size_t llc_bytes) { return std::max(size_t{256} << 20, 4 * llc_bytes); }

size_t LastLevelCacheBytes() {
  for (int name : {_SC_LEVEL4_CACHE_SIZE, _SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE}) {
    const long bytes = sysconf(name);
    if (bytes > 0) return static_cast<size_t>(bytes);
  }
  for (int index = 4; index >= 2; --index) {  // e.g. "266240K"
    std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
    size_t kib = 0;
    if (f >> kib) return kib << 10;
  }
  return 0;
}

uint64_t SumWords(const uint64_t* words, size_t n, SimdLevel level) {
  switch (level) {
    case SimdLevel::kAvx512:
      return SumAvx512(words, n);
    case SimdLevel::kAvx2:
      return SumAvx2(words, n);
    case SimdLevel::kScalar:
      break;
  }
  return SumScalar(words, n);
}

double ReadBandwidthGbs(double seconds, size_t bytes, int threads) {
  // Written once: no page is first touched while timed.
  const std::vector<uint64_t> buf(std::max<size_t>(bytes / sizeof(uint64_t), 1), 1);
  return ReadBandwidthGbs(seconds, buf, threads);
}

double ReadBandwidthGbs(double seconds, const std::vector<uint64_t>& buf, int threads) {
  const size_t words = buf.size();
  if (words == 0) return 0;
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const SimdLevel level = CpuSimdLevel();
  std::vector<uint64_t> sinks(static_cast<size_t>(threads) * 8);  // one cache line each
  auto pass = [&] {
    std::vector<std::thread> pool;
    const size_t per = words / threads;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] { sinks[t * 8] += SumWords(buf.data() + t * per, per, level); });
    }
    for (auto& th : pool) th.join();
  };
  pass();             // warm-up: thread start, the buffer into the TLB
  double best_s = 0;  // the fastest pass, as STREAM reports its best of several trials
  const auto t0 = Clock::now();
  do {
    const auto p0 = Clock::now();
    pass();
    const double s = Since(p0);
    if (best_s == 0 || s < best_s) best_s = s;
  } while (Since(t0) < seconds);
  if (std::accumulate(sinks.begin(), sinks.end(), uint64_t{0}) == 0) return 0;  // keeps the sums
  const size_t read = words / threads * threads * sizeof(uint64_t);
  return static_cast<double>(read) / best_s / 1e9;
}

}  // namespace orca::bench
