// Consistency of every CudaBackend operation with the CPU reference backend (in the
// way of ggml's test-backend-ops): fresh random inputs, the GPU output poisoned with NaN
// before each run so an unwritten element fails, relative error (max |gpu - cpu| /
// max |cpu|) under 1e-3 on F32 paths and 1e-2 where a 16-bit type rounds activations.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>
#include <thread>

#include "engine/backend/cuda/cuda_backend.h"
#include "tests/kernels/gpu_test_util.h"

namespace orca {
namespace {

using testing::BackendPair;
using testing::Mirrored;
using testing::RandomFloats;

constexpr double kF32Tol = 1e-3;
constexpr double k16BitTol = 1e-2;

#define ORCA_SETUP_BACKENDS(pair) \
  ORCA_REQUIRE_GPU();             \
  BackendPair pair;               \
  ASSERT_TRUE(pair.ok()) << pair.error()

std::vector<float> Values(BackendPair& b, const Mirrored& m, bool gpu) {
  return gpu ? b.GpuValues(m.gpu) : b.CpuValues(m.cpu);
}

TEST(CudaBackendOpsTest, EmbeddingAllTableTypes) {
  ORCA_SETUP_BACKENDS(b);
  std::mt19937 rng(1);
  const int64_t vocab = 300, hidden = 96, n = 41;
  std::vector<int32_t> ids(n);
  for (auto& id : ids) id = static_cast<int32_t>(rng() % vocab);
  auto [cpu_ids, gpu_ids] = b.UploadInts(ids);
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    Mirrored table = b.Upload(RandomFloats(rng, vocab * hidden), vocab, hidden, dtype);
    Mirrored out = b.Upload(RandomFloats(rng, n * hidden), n, hidden);
    b.Poison(out);
    b.cpu().Embedding(cpu_ids, n, table.cpu, out.cpu, false);
    b.gpu().Embedding(gpu_ids, n, table.gpu, out.gpu, false);
    ORCA_EXPECT_CONSISTENT(Values(b, out, true), Values(b, out, false), 1e-6);
    // Accumulate onto the (now equal) outputs.
    b.cpu().Embedding(cpu_ids, n, table.cpu, out.cpu, true);
    b.gpu().Embedding(gpu_ids, n, table.gpu, out.gpu, true);
    ORCA_EXPECT_CONSISTENT(Values(b, out, true), Values(b, out, false), 1e-6);
  }
}

struct LinearCase {
  int64_t m, k, n;
  DType dtype;
  bool bias;
  bool strided;
};

TEST(CudaBackendOpsTest, LinearMatchesCpu) {
  ORCA_SETUP_BACKENDS(b);
  std::mt19937 rng(2);
  const LinearCase cases[] = {
      {1, 64, 48, DType::kF32, false, false},    {37, 128, 96, DType::kF32, true, true},
      {5, 200, 136, DType::kF32, true, false},   {1, 256, 512, DType::kF16, false, false},
      {33, 256, 96, DType::kF16, true, true},    {1, 256, 512, DType::kBF16, true, false},
      {70, 512, 256, DType::kBF16, false, true}, {16, 2048, 64, DType::kBF16, true, true},
  };
  for (const LinearCase& c : cases) {
    SCOPED_TRACE(::testing::Message()
                 << "m=" << c.m << " k=" << c.k << " n=" << c.n << " " << DTypeName(c.dtype)
                 << (c.bias ? " bias" : "") << (c.strided ? " strided" : ""));
    // Strided x and out: views into wider buffers, as the fused QKV layout gives.
    const int64_t x_pad = c.strided ? 24 : 0, out_pad = c.strided ? 8 : 0;
    Mirrored xbuf = b.Upload(RandomFloats(rng, c.m * (c.k + x_pad)), c.m, c.k + x_pad);
    Mirrored w = b.Upload(RandomFloats(rng, c.n * c.k, -0.1f, 0.1f), c.n, c.k, c.dtype);
    Mirrored bias = b.Upload(RandomFloats(rng, c.n), 1, c.n);
    Mirrored obuf = b.Upload(RandomFloats(rng, c.m * (c.n + out_pad)), c.m, c.n + out_pad);
    // The CPU leaves the padding columns alone: copy them so both buffers agree there.
    std::vector<float> cpu_before = b.CpuValues(obuf.cpu);
    ASSERT_TRUE(
        b.gpu()
            .CopyToDevice(obuf.gpu.data, cpu_before.data(), cpu_before.size() * sizeof(float))
            .ok());
    std::vector<float> nan_cols(static_cast<size_t>(c.n), std::nanf(""));
    for (int64_t r = 0; r < c.m; ++r) {  // poison the columns the GEMM must write
      ASSERT_TRUE(b.gpu()
                      .CopyToDevice(static_cast<float*>(obuf.gpu.data) + r * (c.n + out_pad),
                                    nan_cols.data(), nan_cols.size() * sizeof(float))
                      .ok());
    }
    Tensor xc = xbuf.cpu.Cols(x_pad, c.k), xg = xbuf.gpu.Cols(x_pad, c.k);
    Tensor oc = obuf.cpu.Cols(0, c.n), og = obuf.gpu.Cols(0, c.n);
    b.cpu().Linear(xc, w.cpu, c.bias ? &bias.cpu : nullptr, oc);
    b.gpu().Linear(xg, w.gpu, c.bias ? &bias.gpu : nullptr, og);
    ORCA_EXPECT_CONSISTENT(Values(b, obuf, true), Values(b, obuf, false),
                           c.dtype == DType::kF32 ? kF32Tol : k16BitTol);
  }
}

TEST(CudaBackendOpsTest, AddMatchesCpu) {
  ORCA_SETUP_BACKENDS(b);
  std::mt19937 rng(3);
  Mirrored x = b.Upload(RandomFloats(rng, 19 * 130), 19, 130);
  Mirrored y = b.Upload(RandomFloats(rng, 19 * 130), 19, 130);
  b.cpu().Add(x.cpu, y.cpu);
  b.gpu().Add(x.gpu, y.gpu);
  ORCA_EXPECT_CONSISTENT(Values(b, x, true), Values(b, x, false), 1e-6);
}

TEST(CudaBackendOpsTest, NormsMatchCpu) {
  ORCA_SETUP_BACKENDS(b);
  std::mt19937 rng(4);
  for (int64_t cols : {8, 64, 333, 2048, 5120}) {
    SCOPED_TRACE(cols);
    const int64_t rows = 13;
    Mirrored x = b.Upload(RandomFloats(rng, rows * cols, -3.0f, 3.0f), rows, cols);
    Mirrored w = b.Upload(RandomFloats(rng, cols, 0.5f, 1.5f), 1, cols);
    Mirrored bias = b.Upload(RandomFloats(rng, cols), 1, cols);
    Mirrored out = b.Upload(std::vector<float>(rows * cols), rows, cols);
    b.Poison(out);
    b.cpu().RmsNorm(x.cpu, w.cpu, 1e-5f, out.cpu);
    b.gpu().RmsNorm(x.gpu, w.gpu, 1e-5f, out.gpu);
    ORCA_EXPECT_CONSISTENT(Values(b, out, true), Values(b, out, false), kF32Tol);
    b.Poison(out);
    b.cpu().LayerNorm(x.cpu, w.cpu, bias.cpu, 1e-5f, out.cpu);
    b.gpu().LayerNorm(x.gpu, w.gpu, bias.gpu, 1e-5f, out.gpu);
    ORCA_EXPECT_CONSISTENT(Values(b, out, true), Values(b, out, false), kF32Tol);
    // In place (out aliases x), as the final norm runs.
    b.cpu().RmsNorm(x.cpu, w.cpu, 1e-5f, x.cpu);
    b.gpu().RmsNorm(x.gpu, w.gpu, 1e-5f, x.gpu);
    ORCA_EXPECT_CONSISTENT(Values(b, x, true), Values(b, x, false), kF32Tol);
    b.cpu().LayerNorm(x.cpu, w.cpu, bias.cpu, 1e-5f, x.cpu);
    b.gpu().LayerNorm(x.gpu, w.gpu, bias.gpu, 1e-5f, x.gpu);
    ORCA_EXPECT_CONSISTENT(Values(b, x, true), Values(b, x, false), kF32Tol);
  }
}

// The fused residual add + norm (the CPU backend's is Add, then the norm): the
// residual stream and the normalised rows both match, with out aliasing delta as the
// runner calls it.
TEST(CudaBackendOpsTest, FusedAddNormsMatchCpu) {
  ORCA_SETUP_BACKENDS(b);
  std::mt19937 rng(41);
  for (int64_t cols : {8, 333, 2048}) {
    SCOPED_TRACE(cols);
    const int64_t rows = 11;
    Mirrored w = b.Upload(RandomFloats(rng, cols, 0.5f, 1.5f), 1, cols);
    Mirrored bias = b.Upload(RandomFloats(rng, cols), 1, cols);
    for (bool layer_norm : {false, true}) {
      SCOPED_TRACE(layer_norm ? "LayerNorm" : "RMSNorm");
      Mirrored residual = b.Upload(RandomFloats(rng, rows * cols, -3.0f, 3.0f), rows, cols);
      Mirrored delta = b.Upload(RandomFloats(rng, rows * cols, -3.0f, 3.0f), rows, cols);
      for (Backend* be : {&b.cpu(), &b.gpu()}) {
        const bool cpu = be == &b.cpu();
        Tensor r = cpu ? residual.cpu : residual.gpu, d = cpu ? delta.cpu : delta.gpu;
        if (layer_norm) {
          be->AddLayerNorm(r, d, cpu ? w.cpu : w.gpu, cpu ? bias.cpu : bias.gpu, 1e-5f, d);
        } else {
          be->AddRmsNorm(r, d, cpu ? w.cpu : w.gpu, 1e-5f, d);
        }
      }
      ORCA_EXPECT_CONSISTENT(Values(b, residual, true), Values(b, residual, false), 1e-6);
      ORCA_EXPECT_CONSISTENT(Values(b, delta, true), Values(b, delta, false), kF32Tol);
    }
  }
}

TEST(CudaBackendOpsTest, RopeMatchesCpuAtLargePositions) {
  ORCA_SETUP_BACKENDS(b);
  std::mt19937 rng(5);
  struct Case {
    int32_t heads, head_dim;
    double theta;
  };
  for (const Case& c :
       {Case{8, 8, 10000.0}, Case{32, 64, 10000.0}, Case{4, 128, 500000.0}, Case{3, 80, 1e6}}) {
    SCOPED_TRACE(::testing::Message() << c.heads << "x" << c.head_dim << " theta " << c.theta);
    const int64_t t = 23, width = int64_t{c.heads} * c.head_dim, pad = 2 * c.head_dim;
    std::vector<int32_t> pos(t);
    for (int64_t i = 0; i < t; ++i)
      pos[i] = i < 3 ? static_cast<int32_t>(i) : static_cast<int32_t>(rng() % 131072);
    auto [cpu_pos, gpu_pos] = b.UploadInts(pos);
    // Rotate a strided view (q inside a fused QKV row); the pad columns must stay as they are.
    Mirrored buf = b.Upload(RandomFloats(rng, t * (width + pad)), t, width + pad);
    b.cpu().Rope(buf.cpu.Cols(pad / 2, width), cpu_pos, c.heads, c.head_dim, c.theta);
    b.gpu().Rope(buf.gpu.Cols(pad / 2, width), gpu_pos, c.heads, c.head_dim, c.theta);
    ORCA_EXPECT_CONSISTENT(Values(b, buf, true), Values(b, buf, false), kF32Tol);
  }
}

TEST(CudaBackendOpsTest, ActivationsMatchCpu) {
  ORCA_SETUP_BACKENDS(b);
  std::mt19937 rng(6);
  const int64_t t = 17, inter = 172;
  for (Activation act : {Activation::kSilu, Activation::kGeluTanh, Activation::kGeluErf}) {
    SCOPED_TRACE(static_cast<int>(act));
    Mirrored gate_up = b.Upload(RandomFloats(rng, t * 2 * inter, -6.0f, 6.0f), t, 2 * inter);
    Mirrored out = b.Upload(std::vector<float>(t * inter), t, inter);
    b.Poison(out);
    b.cpu().GatedActivation(gate_up.cpu, act, out.cpu);
    b.gpu().GatedActivation(gate_up.gpu, act, out.gpu);
    ORCA_EXPECT_CONSISTENT(Values(b, out, true), Values(b, out, false), kF32Tol);
    b.cpu().ActivationInPlace(gate_up.cpu, act);
    b.gpu().ActivationInPlace(gate_up.gpu, act);
    ORCA_EXPECT_CONSISTENT(Values(b, gate_up, true), Values(b, gate_up, false), kF32Tol);
  }
}

// Both backends write the same bits, for every cache type: round to nearest even,
// float16 saturating at +-65504 (values beyond it are planted), NaN kept.
TEST(CudaBackendOpsTest, KvWriteThroughSlotMapping) {
  ORCA_SETUP_BACKENDS(b);
  std::mt19937 rng(7);
  const int64_t t = 29, width = 4 * 16, slots = 64 * 16, qkv_width = 3 * width;
  std::vector<int32_t> all(slots);
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng);
  std::vector<int32_t> mapping(all.begin(), all.begin() + t);
  auto [cpu_map, gpu_map] = b.UploadInts(mapping);
  std::vector<float> qkv_values = RandomFloats(rng, t * qkv_width);
  qkv_values[width + 3] = 1e6f;                   // a key beyond float16's range
  qkv_values[qkv_width + 2 * width + 5] = -7e4f;  // a value beyond it
  qkv_values[2 * qkv_width + width] = 65519.0f;   // rounds to inf in float16 without saturation
  Mirrored qkv = b.Upload(qkv_values, t, qkv_width);
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(DTypeName(dtype));
    std::vector<float> cache_init = RandomFloats(rng, slots * width);
    Mirrored kc = b.UploadCache(cache_init, slots, width, dtype);
    Mirrored vc = b.UploadCache(cache_init, slots, width, dtype);
    const KvCacheShape shape{64, 16, 4, 16, dtype};  // slots = 64 blocks x 16
    b.cpu().KvWrite(qkv.cpu.Cols(width, width), qkv.cpu.Cols(2 * width, width), cpu_map, shape,
                    kc.cpu, vc.cpu);
    b.gpu().KvWrite(qkv.gpu.Cols(width, width), qkv.gpu.Cols(2 * width, width), gpu_map, shape,
                    kc.gpu, vc.gpu);
    EXPECT_EQ(b.RawBytes(kc, true), b.RawBytes(kc, false));
    EXPECT_EQ(b.RawBytes(vc, true), b.RawBytes(vc, false));
  }
}

// 16-bit activations (ModelRunnerOptions::sixteen_bit_activations): each operation that
// takes them, with its 16-bit inputs holding values already rounded to the type (the
// CPU computes from the same values in float32) and its 16-bit outputs poisoned first,
// so one rounding of the result separates the two: at most 2^-8 relative for bfloat16,
// 2^-11 for float16, plus the two backends' float32 differences (a rounding toward zero,
// or a second rounding, takes up to twice that). The residual stream and the block
// outputs stay float32.
double OneRounding(DType a) { return a == DType::kBF16 ? 4e-3 : 5e-4; }

TEST(CudaBackendOpsTest, SixteenBitActivationsMatchCpu) {
  ORCA_SETUP_BACKENDS(b);
  std::mt19937 rng(9);
  for (DType a : {DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(DTypeName(a));
    const double tol = OneRounding(a);
    const int64_t t = 13, h = 333;
    // Norms into 16 bits, alone and fused with the residual add (the residual's sum
    // stays float32 and exact).
    Mirrored x = b.Upload(RandomFloats(rng, t * h, -3.0f, 3.0f), t, h);
    Mirrored delta = b.Upload(RandomFloats(rng, t * h), t, h);
    Mirrored w = b.Upload(RandomFloats(rng, h, 0.5f, 1.5f), 1, h);
    Mirrored bias = b.Upload(RandomFloats(rng, h), 1, h);
    Mirrored normed = b.Upload(std::vector<float>(t * h), t, h, a);
    for (int kind = 0; kind < 4; ++kind) {
      SCOPED_TRACE(kind);
      b.Poison(normed);
      if (kind == 0) {
        b.cpu().RmsNorm(x.cpu, w.cpu, 1e-5f, normed.cpu);
        b.gpu().RmsNorm(x.gpu, w.gpu, 1e-5f, normed.gpu);
      } else if (kind == 1) {
        b.cpu().LayerNorm(x.cpu, w.cpu, bias.cpu, 1e-5f, normed.cpu);
        b.gpu().LayerNorm(x.gpu, w.gpu, bias.gpu, 1e-5f, normed.gpu);
      } else if (kind == 2) {
        b.cpu().AddRmsNorm(x.cpu, delta.cpu, w.cpu, 1e-5f, normed.cpu);
        b.gpu().AddRmsNorm(x.gpu, delta.gpu, w.gpu, 1e-5f, normed.gpu);
      } else {
        b.cpu().AddLayerNorm(x.cpu, delta.cpu, w.cpu, bias.cpu, 1e-5f, normed.cpu);
        b.gpu().AddLayerNorm(x.gpu, delta.gpu, w.gpu, bias.gpu, 1e-5f, normed.gpu);
      }
      ORCA_EXPECT_CONSISTENT(Values(b, normed, true), Values(b, normed, false), tol);
      ORCA_EXPECT_CONSISTENT(Values(b, x, true), Values(b, x, false), 1e-6);
    }

    // RoPE in place on a strided 16-bit view; the pad columns keep their bits.
    const int32_t heads = 4, head_dim = 64;
    const int64_t width = heads * head_dim, pad = head_dim;
    std::vector<int32_t> pos(t);
    for (int64_t i = 0; i < t; ++i) pos[i] = static_cast<int32_t>(rng() % 131072);
    auto [cpu_pos, gpu_pos] = b.UploadInts(pos);
    Mirrored qkv = b.Upload(RandomFloats(rng, t * (width + pad)), t, width + pad, a);
    b.cpu().Rope(qkv.cpu.Cols(pad, width), cpu_pos, heads, head_dim, 1e4);
    b.gpu().Rope(qkv.gpu.Cols(pad, width), gpu_pos, heads, head_dim, 1e4);
    ORCA_EXPECT_CONSISTENT(Values(b, qkv, true), Values(b, qkv, false), tol);

    // KV write from 16-bit k and v: the caches get the CPU's bits (rounding a 16-bit
    // value to the cache's type is exact or the same round to nearest even).
    for (DType kv : {DType::kF32, DType::kF16, DType::kBF16}) {
      SCOPED_TRACE(DTypeName(kv));
      const int64_t slots = 8 * 16, kv_w = 2 * 32;
      std::vector<int32_t> all(slots);
      std::iota(all.begin(), all.end(), 0);
      std::shuffle(all.begin(), all.end(), rng);
      auto [cpu_map, gpu_map] = b.UploadInts(std::vector<int32_t>(all.begin(), all.begin() + t));
      Mirrored kv_rows = b.Upload(RandomFloats(rng, t * 2 * kv_w, -4.0f, 4.0f), t, 2 * kv_w, a);
      Mirrored kc = b.UploadCache(RandomFloats(rng, slots * kv_w), slots, kv_w, kv);
      Mirrored vc = b.UploadCache(RandomFloats(rng, slots * kv_w), slots, kv_w, kv);
      const KvCacheShape shape{8, 16, 2, 32, kv};
      b.cpu().KvWrite(kv_rows.cpu.Cols(0, kv_w), kv_rows.cpu.Cols(kv_w, kv_w), cpu_map, shape,
                      kc.cpu, vc.cpu);
      b.gpu().KvWrite(kv_rows.gpu.Cols(0, kv_w), kv_rows.gpu.Cols(kv_w, kv_w), gpu_map, shape,
                      kc.gpu, vc.gpu);
      EXPECT_EQ(b.RawBytes(kc, true), b.RawBytes(kc, false));
      EXPECT_EQ(b.RawBytes(vc, true), b.RawBytes(vc, false));
    }

    // The activation functions, 16-bit in and out.
    const int64_t inter = 172;
    for (Activation act : {Activation::kSilu, Activation::kGeluTanh, Activation::kGeluErf}) {
      SCOPED_TRACE(static_cast<int>(act));
      Mirrored gate_up = b.Upload(RandomFloats(rng, t * 2 * inter, -6.0f, 6.0f), t, 2 * inter, a);
      Mirrored out = b.Upload(std::vector<float>(t * inter), t, inter, a);
      b.Poison(out);
      b.cpu().GatedActivation(gate_up.cpu, act, out.cpu);
      b.gpu().GatedActivation(gate_up.gpu, act, out.gpu);
      ORCA_EXPECT_CONSISTENT(Values(b, out, true), Values(b, out, false), tol);
      b.cpu().ActivationInPlace(gate_up.cpu, act);
      b.gpu().ActivationInPlace(gate_up.gpu, act);
      ORCA_EXPECT_CONSISTENT(Values(b, gate_up, true), Values(b, gate_up, false), tol);
    }

    // GEMMs on 16-bit x: into 16 bits with a bias (QKV, gate/up), and into float32 (the
    // out-projection and down GEMMs, whose outputs join the residual stream).
    for (DType out_type : {a, DType::kF32}) {
      SCOPED_TRACE(DTypeName(out_type));
      const int64_t m = 9, k = 256, n = 96;
      Mirrored xs = b.Upload(RandomFloats(rng, m * k), m, k, a);
      Mirrored wt = b.Upload(RandomFloats(rng, n * k, -0.1f, 0.1f), n, k, a);
      Mirrored bs = b.Upload(RandomFloats(rng, n), 1, n);
      Mirrored out = b.Upload(std::vector<float>(m * n), m, n, out_type);
      b.Poison(out);
      b.cpu().Linear(xs.cpu, wt.cpu, &bs.cpu, out.cpu);
      b.gpu().Linear(xs.gpu, wt.gpu, &bs.gpu, out.gpu);
      ORCA_EXPECT_CONSISTENT(Values(b, out, true), Values(b, out, false), tol);
    }
  }
  ASSERT_TRUE(b.gpu().Synchronize().ok());
}

TEST(CudaBackendOpsTest, GatherRowsMatchesCpu) {
  ORCA_SETUP_BACKENDS(b);
  std::mt19937 rng(8);
  const int64_t rows = 50, cols = 70, n = 9;
  std::vector<int32_t> idx(n);
  for (auto& i : idx) i = static_cast<int32_t>(rng() % rows);
  auto [cpu_idx, gpu_idx] = b.UploadInts(idx);
  Mirrored x = b.Upload(RandomFloats(rng, rows * (cols + 6)), rows, cols + 6);
  Mirrored out = b.Upload(std::vector<float>(n * cols), n, cols);
  b.Poison(out);
  b.cpu().GatherRows(x.cpu.Cols(6, cols), cpu_idx, n, out.cpu);
  b.gpu().GatherRows(x.gpu.Cols(6, cols), gpu_idx, n, out.gpu);
  ORCA_EXPECT_CONSISTENT(Values(b, out, true), Values(b, out, false), 1e-7);
}

TEST(CudaBackendOpsTest, ShapeErrorsAreReportedBySynchronize) {
  ORCA_SETUP_BACKENDS(b);
  Mirrored x = b.Upload(std::vector<float>(4 * 8), 4, 8);
  Mirrored w = b.Upload(std::vector<float>(3 * 5), 3, 5);  // K mismatch
  Mirrored out = b.Upload(std::vector<float>(4 * 3), 4, 3);
  b.gpu().Linear(x.gpu, w.gpu, nullptr, out.gpu);
  absl::Status s = b.gpu().Synchronize();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("Linear"), std::string::npos) << s;
  EXPECT_TRUE(b.gpu().Synchronize().ok()) << "the error is reported once";
}

TEST(CudaBackendOpsTest, AllocationBeyondBudgetFails) {
  ORCA_REQUIRE_GPU();
  CudaBackendOptions opts;
  opts.memory_fraction = 0.01;
  auto gpu = CreateCudaBackend(opts);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  const MemoryInfo info = (*gpu)->GetMemoryInfo();
  EXPECT_GT(info.total_bytes, 0u);
  EXPECT_LE(info.free_bytes, info.total_bytes);
  auto small = (*gpu)->Allocate(1 << 20);
  EXPECT_TRUE(small.ok()) << small.status();
  auto big = (*gpu)->Allocate(info.total_bytes + 1);
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted) << big.status();
  EXPECT_TRUE((*gpu)->Synchronize().ok());
}

// CopyToDeviceAsync takes its source at once and never rewrites a staging slot that a
// copy still has to read: the stream is held on a host gate while 20 copies are issued
// (more than the uploader's slots, so the ninth must wait for the first one's copy), the
// source changing after each; a second thread opens the gate later.
TEST(CudaBackendOpsTest, CopyToDeviceAsyncTakesItsSourceAtOnce) {
  ORCA_REQUIRE_GPU();
  auto created = CreateCudaBackend();
  ASSERT_TRUE(created.ok()) << created.status();
  auto& gpu = static_cast<CudaBackend&>(**created);
  constexpr int kCopies = 20;
  constexpr size_t kInts = 1 << 16;
  std::vector<std::unique_ptr<DeviceBuffer>> dst;
  for (int c = 0; c < kCopies; ++c) {
    auto buf = gpu.Allocate(kInts * sizeof(int32_t));
    ASSERT_TRUE(buf.ok()) << buf.status();
    dst.push_back(std::move(*buf));
  }
  std::atomic<bool> open{false};
  auto gate = [](void* flag) {
    while (!static_cast<std::atomic<bool>*>(flag)->load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  };
  ASSERT_EQ(cudaLaunchHostFunc(gpu.stream(), gate, &open), cudaSuccess);
  std::thread opener([&open] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    open = true;
  });
  std::vector<int32_t> src(kInts);
  for (int c = 0; c < kCopies; ++c) {
    std::fill(src.begin(), src.end(), c);
    const absl::Status s = gpu.CopyToDeviceAsync(dst[c]->data(), src.data(), src.size() * 4);
    EXPECT_TRUE(s.ok()) << s;
  }
  std::fill(src.begin(), src.end(), -1);
  opener.join();
  ASSERT_TRUE(gpu.Synchronize().ok());
  std::vector<int32_t> back(kInts);
  for (int c = 0; c < kCopies; ++c) {
    ASSERT_TRUE(gpu.CopyToHost(back.data(), dst[c]->data(), back.size() * 4).ok());
    EXPECT_EQ(std::count(back.begin(), back.end(), c), static_cast<ptrdiff_t>(kInts))
        << "copy " << c << " read its source after it changed";
  }
}

TEST(CudaBackendOpsTest, CreateFailsCleanlyForMissingDevice) {
  CudaBackendOptions opts;
  opts.device = 1000;
  auto gpu = CreateCudaBackend(opts);
  EXPECT_EQ(gpu.status().code(), absl::StatusCode::kFailedPrecondition) << gpu.status();
}

}  // namespace
}  // namespace orca
