// The roofline's read probe: every load width sums the same words (tails and unaligned
// starts included), and the probe returns a rate.
#include "bench/engine_sweep/read_probe.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <vector>

namespace orca::bench {
namespace {

TEST(ReadProbeTest, EveryLoadWidthSumsEveryWord) {
  std::mt19937_64 rng(7);
  std::vector<uint64_t> words(1100);
  for (auto& w : words) w = rng();  // large words: the sums wrap
  for (SimdLevel level : {SimdLevel::kScalar, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
    if (level > CpuMaxSimdLevel()) continue;
    for (size_t start : {0, 1, 3}) {
      for (size_t n : {0, 1, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65, 1027}) {
        const uint64_t want =
            std::accumulate(words.begin() + start, words.begin() + start + n, uint64_t{0});
        EXPECT_EQ(SumWords(words.data() + start, n, level), want)
            << SimdLevelName(level) << " start " << start << " n " << n;
      }
    }
  }
}

TEST(ReadProbeTest, BufferIsFourLastLevelCachesAndAtLeast256MiB) {
  constexpr size_t kMiB = size_t{1} << 20;
  EXPECT_EQ(ReadProbeBytes(0), 256 * kMiB);          // unknown cache
  EXPECT_EQ(ReadProbeBytes(32 * kMiB), 256 * kMiB);  // a desktop's L3
  EXPECT_EQ(ReadProbeBytes(64 * kMiB), 256 * kMiB);
  EXPECT_EQ(ReadProbeBytes(260 * kMiB), 1040 * kMiB);  // the development Xeon's
}

TEST(ReadProbeTest, ReturnsARate) {
  EXPECT_GT(ReadBandwidthGbs(0.01, size_t{1} << 20, 1), 0);
  EXPECT_GT(ReadBandwidthGbs(0.01, size_t{1} << 20, 2), 0);
}

}  // namespace
}  // namespace orca::bench
