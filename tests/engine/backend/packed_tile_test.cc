// ChunkedTiles (packed_tile.h), the walk of AVX2 float32 tiles over a panel's block, with a
// fake tile that records what it was asked to do: every (row, column) of the block is
// covered exactly once, chunk by chunk in increasing columns; and while a chunk's tiles
// run, their prefetches between them reach every line of the next chunk (the last one:
// of `after`), so that memory streams while the tiles multiply. A lone tile streams its
// own weights kAvx2F32TilePrefetchBytes ahead.
#include "engine/backend/cpu/packed_tile.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"

namespace orca {
namespace {

using packed_internal::ChunkedTiles;
using packed_internal::kAvx2F32TilePrefetchBytes;
using packed_internal::kTileChunkColumns;
using packed_internal::TilePrefetch;

struct Call {
  int c, ck, r, rows;
  TilePrefetch pf;
};

std::vector<Call> Walk(int m, int max_rows, int kc, const char* panel, int64_t bytes_per_column,
                       const char* after, bool cold) {
  std::vector<Call> calls;
  ChunkedTiles(m, max_rows, kc, panel, bytes_per_column, after, cold,
               [&](int c, int ck, int r, int rows, TilePrefetch pf) {
                 calls.push_back({c, ck, r, rows, pf});
               });
  return calls;
}

// The 64-byte lines (as offsets from base) a call's prefetches touch, one a column.
void AddLines(const Call& call, const char* base, std::set<int64_t>& lines) {
  for (int c = 0; c < call.ck; ++c) {
    lines.insert((call.pf.at + ((c * call.pf.step_q8) >> 8) - base) / 64);
  }
}

TEST(ChunkedTilesTest, CoversTheBlockOnceAndPrefetchesTheNextChunkWhileMultiplying) {
  // Float32 panels: 64 bytes a column, tiles of up to 6 rows (packed_gemm.cc's AVX2 ones).
  constexpr int64_t bytes_per_column = 64;
  constexpr int max_rows = 6;
  for (int m : {7, 12, 16, 40, 63}) {
    for (int kc : {2, 129, 256, 768, 2048, 2047}) {
      for (bool cold : {false, true}) {
        SCOPED_TRACE(absl::StrCat("m=", m, " kc=", kc, " cold=", cold));
        // 64-byte aligned, as packed weights are.
        std::vector<char> memory((kc + 2 * kTileChunkColumns) * bytes_per_column + 64);
        const char* panel = memory.data() + (64 - reinterpret_cast<uintptr_t>(memory.data()) % 64);
        const char* after = panel + (kc + kTileChunkColumns) * bytes_per_column;
        const std::vector<Call> calls = Walk(m, max_rows, kc, panel, bytes_per_column, after, cold);
        std::vector<int> covered(static_cast<size_t>(m) * kc, 0);
        int last_c = -1;
        for (size_t i = 0; i < calls.size();) {
          const int c = calls[i].c, ck = calls[i].ck;
          ASSERT_GT(c, last_c) << "chunks in increasing columns";
          ASSERT_EQ(c, last_c < 0 ? 0 : last_c + kTileChunkColumns);
          last_c = c;
          // The next chunk's lines, and the lines this chunk's tiles prefetch.
          const bool last = c + ck >= kc;
          const char* next = last ? after : panel + (c + ck) * bytes_per_column;
          const int next_cols = last ? ck : std::min(kTileChunkColumns, kc - c - ck);
          std::set<int64_t> want, got;
          for (int64_t b = 0; b < next_cols * bytes_per_column; b += 64) {
            want.insert((next + b - panel) / 64);
          }
          for (; i < calls.size() && calls[i].c == c; ++i) {
            const Call& call = calls[i];
            ASSERT_EQ(call.ck, ck);
            for (int r = call.r; r < call.r + call.rows; ++r) {
              for (int j = c; j < c + ck; ++j) ++covered[static_cast<size_t>(r) * kc + j];
            }
            if (cold && c == 0 && call.r == 0) {  // the first tile streams its own chunk
              EXPECT_EQ(call.pf.at, panel + kAvx2F32TilePrefetchBytes);
              EXPECT_EQ(call.pf.step_q8, bytes_per_column * 256);
            } else {
              AddLines(call, panel, got);
            }
          }
          for (int64_t line : want) {
            EXPECT_TRUE(got.count(line)) << "chunk at column " << c << ": line " << line
                                         << " of the next chunk not prefetched";
          }
        }
        for (size_t e = 0; e < covered.size(); ++e) {
          ASSERT_EQ(covered[e], 1) << "row " << e / kc << " column " << e % kc;
        }
      }
    }
  }
}

TEST(ChunkedTilesTest, ALoneTileStreamsItsOwnWeightsAhead) {
  const std::vector<char> memory(2048 * 64);
  const char* panel = memory.data();
  const std::vector<Call> calls = Walk(6, 6, 2048, panel, 64, nullptr, true);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].c, 0);
  EXPECT_EQ(calls[0].ck, 2048);
  EXPECT_EQ(calls[0].rows, 6);
  EXPECT_EQ(calls[0].pf.at, panel + kAvx2F32TilePrefetchBytes);
  EXPECT_EQ(calls[0].pf.step_q8, 64 * 256);
}

}  // namespace
}  // namespace orca
