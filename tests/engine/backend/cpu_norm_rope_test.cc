// CpuBackend's norms (RMSNorm, LayerNorm and their fused residual-add forms) and RoPE
// against float64 evaluations of their definitions (Hugging Face's: RMSNorm x /
// sqrt(mean(x^2) + eps) * w; LayerNorm (x - mean) / sqrt(var + eps) * w + b; rotate-half
// RoPE with angles position * theta^(-2i / head_dim)), on enough rows that the backend
// spreads them over its threads, rows whose width is not a multiple of eight (the sums'
// tails), RoPE's positions out of order, repeated and far apart (its table of angles
// grows while serving and is rebuilt for another theta), on a strided view as the
// runner rotates q and k inside the fused QKV rows.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "engine/backend/backend.h"

namespace orca {
namespace {

std::vector<float> Random(size_t n, float scale, std::mt19937& rng) {
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng) * scale;
  return v;
}

// The float64 norm of one row: RMSNorm without bias, LayerNorm with.
std::vector<double> NormOfRow(const float* x, int64_t h, const std::vector<float>& w,
                              const std::vector<float>* bias, float eps) {
  double mean = 0, sq = 0;
  for (int64_t j = 0; j < h; ++j) mean += x[j];
  mean /= double(h);
  for (int64_t j = 0; j < h; ++j) {
    const double c = bias != nullptr ? x[j] - mean : x[j];
    sq += c * c;
  }
  const double inv = 1.0 / std::sqrt(sq / double(h) + eps);
  std::vector<double> out(h);
  for (int64_t j = 0; j < h; ++j) {
    out[j] = bias != nullptr ? (x[j] - mean) * inv * w[j] + (*bias)[j] : x[j] * inv * w[j];
  }
  return out;
}

TEST(CpuNormTest, NormsAndFusedAddsMatchFloat64) {
  auto backend = CreateCpuBackend(2);
  std::mt19937 rng(5);
  const int64_t rows = 300, h = 771;  // 300 x 771: over the parallel threshold; 771 % 8 = 3
  const float eps = 1e-5f;
  const std::vector<float> w = Random(h, 1.0f, rng), bias = Random(h, 0.5f, rng);
  for (bool layer_norm : {false, true}) {
    for (bool fused : {false, true}) {
      const std::string what = std::string(layer_norm ? "LayerNorm" : "RMSNorm") +
                               (fused ? " after the residual add" : "");
      // Rows with an offset (LayerNorm's mean) and a spread of scales.
      std::vector<float> x = Random(rows * h, 1.0f, rng);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < h; ++j) x[r * h + j] = x[r * h + j] * (1 + r % 7) + 3.0f;
      }
      const std::vector<float> delta = Random(rows * h, 2.0f, rng);
      std::vector<float> expected_residual = x;
      if (fused) {
        for (size_t i = 0; i < x.size(); ++i) expected_residual[i] = x[i] + delta[i];
      }
      // Fused: the output overwrites delta, as the runner's does.
      std::vector<float> delta_out = delta, out(rows * h, 777.0f);
      const Tensor tx{x.data(), DType::kF32, rows, h},
          tw{const_cast<float*>(w.data()), DType::kF32, 1, h};
      const Tensor tb{const_cast<float*>(bias.data()), DType::kF32, 1, h};
      const Tensor tdelta{delta_out.data(), DType::kF32, rows, h};
      const Tensor tout = fused ? tdelta : Tensor{out.data(), DType::kF32, rows, h};
      if (layer_norm && fused) backend->AddLayerNorm(tx, tdelta, tw, tb, eps, tout);
      if (layer_norm && !fused) backend->LayerNorm(tx, tw, tb, eps, tout);
      if (!layer_norm && fused) backend->AddRmsNorm(tx, tdelta, tw, eps, tout);
      if (!layer_norm && !fused) backend->RmsNorm(tx, tw, eps, tout);
      const float* got = tout.f32();
      for (int64_t r = 0; r < rows; ++r) {
        const std::vector<double> ref =
            NormOfRow(expected_residual.data() + r * h, h, w, layer_norm ? &bias : nullptr, eps);
        for (int64_t j = 0; j < h; ++j) {
          // The residual as float32 adds it; the output within a few float32 roundings.
          ASSERT_EQ(x[r * h + j], expected_residual[r * h + j]) << what << " row " << r;
          ASSERT_NEAR(got[r * h + j], ref[j], 2e-6 * (std::abs(ref[j]) + 1))
              << what << " row " << r << " col " << j;
        }
      }
    }
  }
}

// Checks that `after` (rows of row stride ld) holds the first `heads` heads of `before`
// rotated, in float64, to `positions`.
void ExpectRotated(const std::vector<float>& before, const float* after, int64_t ld,
                   const std::vector<int32_t>& positions, int32_t heads, int32_t head_dim,
                   double theta, const std::string& what) {
  const int32_t half = head_dim / 2;
  for (size_t t = 0; t < positions.size(); ++t) {
    for (int32_t h = 0; h < heads; ++h) {
      for (int32_t i = 0; i < half; ++i) {
        const int64_t lo = t * ld + h * head_dim + i, hi = lo + half;
        const double angle = positions[t] * std::pow(theta, -2.0 * i / head_dim);
        const double a = before[lo], b = before[hi];
        const double want_lo = a * std::cos(angle) - b * std::sin(angle);
        const double want_hi = b * std::cos(angle) + a * std::sin(angle);
        const double tol = 1e-6 * (std::abs(a) + std::abs(b));
        ASSERT_NEAR(after[lo], want_lo, tol) << what << " token " << t << " head " << h << " i "
                                             << i << " position " << positions[t];
        ASSERT_NEAR(after[hi], want_hi, tol) << what << " token " << t << " head " << h << " i "
                                             << i << " position " << positions[t];
      }
    }
  }
}

TEST(CpuRopeTest, RotationsMatchFloat64AsTheTableGrowsAndChanges) {
  auto backend = CreateCpuBackend(2);
  std::mt19937 rng(9);
  const int32_t head_dim = 64, heads = 3, kv_heads = 1;
  // Calls in the order a server meets them: short positions, one far past the table,
  // back to the start, then another model's theta and again the first.
  struct Call {
    std::vector<int32_t> positions;
    double theta;
  };
  std::vector<int32_t> prefill(600);
  for (int32_t p = 0; p < 600; ++p) prefill[p] = p;  // ParallelFor's threshold is passed
  const std::vector<Call> calls = {
      {{3, 0, 7, 7, 1}, 10000.0},        {{2000, 5, 100000, 255, 256}, 10000.0}, {prefill, 10000.0},
      {{0, 1, 2, 131071, 40}, 500000.0}, {{100000, 3, 77777}, 10000.0},
  };
  for (size_t c = 0; c < calls.size(); ++c) {
    const Call& call = calls[c];
    const int64_t tokens = static_cast<int64_t>(call.positions.size());
    // The fused QKV row: q (3 heads), k (1), v (1); q and k are rotated as column views.
    const int64_t width = int64_t{heads + 2 * kv_heads} * head_dim;
    std::vector<float> qkv = Random(tokens * width, 1.0f, rng);
    const std::vector<float> before = qkv;
    const Tensor all{qkv.data(), DType::kF32, tokens, width};
    backend->Rope(all.Cols(0, heads * head_dim), call.positions.data(), heads, head_dim,
                  call.theta);
    backend->Rope(all.Cols(heads * head_dim, kv_heads * head_dim), call.positions.data(), kv_heads,
                  head_dim, call.theta);
    const std::string what = "call " + std::to_string(c);
    ExpectRotated(before, qkv.data(), width, call.positions, heads, head_dim, call.theta,
                  what + " q");
    std::vector<float> k_before(before.begin() + heads * head_dim, before.end());
    ExpectRotated(k_before, qkv.data() + heads * head_dim, width, call.positions, kv_heads,
                  head_dim, call.theta, what + " k");
    for (int64_t t = 0; t < tokens; ++t) {  // v untouched
      for (int64_t j = (heads + kv_heads) * head_dim; j < width; ++j) {
        ASSERT_EQ(qkv[t * width + j], before[t * width + j]) << what << ": v rotated";
      }
    }
  }
}

}  // namespace
}  // namespace orca
