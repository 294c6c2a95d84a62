// OpTimingBackend (bench/engine_sweep/op_timing_backend.h) over the real CPU backend:
// every call reaches the inner backend with its arguments (the same outputs, the same
// weight layout), each operation is counted under its own kind and no other, and Reset
// starts the totals again. Times are only checked to be recorded (positive), never
// against a bound: speed lives in benchmarks.
#include "bench/engine_sweep/op_timing_backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend/backend.h"

namespace orca::bench {
namespace {

using Op = OpTimingBackend::Op;

std::vector<float> Ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(i % 13) - 0.5f;
  return v;
}

TEST(OpTimingBackendTest, WeightUploadReachesTheInnerBackend) {
  auto cpu = CreateCpuBackend(1);
  OpTimingBackend timed(cpu.get());
  const int64_t n = 40, k = 24;
  const std::vector<float> w = Ramp(n * k, 0.01f);
  std::unique_ptr<DeviceBuffer> direct_storage, timed_storage;
  auto direct = cpu->UploadLinearWeight(w.data(), DType::kF32, n, k, &direct_storage);
  auto through = timed.UploadLinearWeight(w.data(), DType::kF32, n, k, &timed_storage);
  ASSERT_TRUE(direct.ok()) << direct.status();
  ASSERT_TRUE(through.ok()) << through.status();
  // The CPU backend packs float32 weights where it has SIMD paths; the base class's
  // default upload would keep them row-major and Linear would read them wrongly.
  EXPECT_EQ(through->layout, direct->layout);
  EXPECT_EQ(timed.name(), cpu->name());
}

TEST(OpTimingBackendTest, CountsEachOperationUnderItsKind) {
  auto cpu = CreateCpuBackend(1);
  OpTimingBackend timed(cpu.get());
  const int64_t m = 3, n = 40, k = 24;
  const std::vector<float> w = Ramp(n * k, 0.01f), x = Ramp(m * k, 0.1f), gain = Ramp(k, 0.2f);
  std::unique_ptr<DeviceBuffer> storage;
  auto wt = timed.UploadLinearWeight(w.data(), DType::kF32, n, k, &storage);
  ASSERT_TRUE(wt.ok()) << wt.status();
  std::vector<float> out_timed(m * n), out_direct(m * n), normed(m * k);
  const Tensor xt{const_cast<float*>(x.data()), DType::kF32, m, k};
  for (int i = 0; i < 3; ++i) timed.Linear(xt, *wt, nullptr, {out_timed.data(), DType::kF32, m, n});
  cpu->Linear(xt, *wt, nullptr, {out_direct.data(), DType::kF32, m, n});
  EXPECT_EQ(out_timed, out_direct);
  const Tensor gt{const_cast<float*>(gain.data()), DType::kF32, 1, k};
  for (int i = 0; i < 2; ++i) timed.RmsNorm(xt, gt, 1e-5f, {normed.data(), DType::kF32, m, k});

  const OpTimingBackend::Totals& t = timed.totals();
  for (int op = 0; op < OpTimingBackend::kNumOps; ++op) {
    const int64_t want = op == OpTimingBackend::kLinear ? 3 : op == OpTimingBackend::kNorm ? 2 : 0;
    EXPECT_EQ(t.calls[op], want) << OpTimingBackend::OpName(static_cast<Op>(op));
    if (want > 0) {
      EXPECT_GT(t.seconds[op], 0) << OpTimingBackend::OpName(static_cast<Op>(op));
    } else {
      EXPECT_EQ(t.seconds[op], 0) << OpTimingBackend::OpName(static_cast<Op>(op));
    }
  }
  timed.Reset();
  for (int op = 0; op < OpTimingBackend::kNumOps; ++op) {
    EXPECT_EQ(timed.totals().calls[op], 0);
    EXPECT_EQ(timed.totals().seconds[op], 0);
  }
}

TEST(OpTimingBackendTest, EveryOpHasItsOwnName) {
  std::vector<std::string> names;
  for (int op = 0; op < OpTimingBackend::kNumOps; ++op) {
    names.push_back(OpTimingBackend::OpName(static_cast<Op>(op)));
    EXPECT_NE(names.back(), "?");
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::unique(names.begin(), names.end()), names.end());
}

}  // namespace
}  // namespace orca::bench
