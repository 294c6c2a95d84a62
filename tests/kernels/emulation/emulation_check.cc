// Host-emulated CUDA kernels (see run.sh) against the CPU backend: every kernel of
// kernels/, with the paged attention over mixed batches (split and unsplit warps, GQA
// groups wider than a block, head dims 6..256, over a thousand sequences) and the
// fused-residual norms that the Backend interface does not reach. Exit status 1 on any
// mismatch.
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <random>
#include "engine/backend/backend.h"
#include "engine/common/dtype.h"
#include "engine/runner/sampler.h"
#include "kernels/activation.cuh"
#include "kernels/add.cuh"
#include "kernels/convert.cuh"
#include "kernels/embedding.cuh"
#include "kernels/gather_rows.cuh"
#include "kernels/kv_write.cuh"
#include "kernels/norm.cuh"
#include "kernels/paged_attention.cuh"
#include "kernels/rope.cuh"
#include "kernels/sampling.cuh"

float EmuF16ToF32(uint16_t h) { return orca::F16ToF32(h); }
uint16_t EmuF32ToF16(float f) { return orca::F32ToF16(f); }
uint16_t EmuF32ToBf16(float f) { return orca::F32ToBf16(f); }

using namespace orca;
static int failures = 0;
std::mt19937 rng(1);
std::vector<float> Rand(size_t n, float lo = -1, float hi = 1) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}
void Check(const char* what, const std::vector<float>& a, const std::vector<float>& e, double tol) {
  double md = 0, mr = 0;
  long bad = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(e[i])) continue;
    if (!std::isfinite(a[i])) {
      ++bad;
      continue;
    }
    md = std::max(md, (double)std::abs(a[i] - e[i]));
    mr = std::max(mr, (double)std::abs(e[i]));
  }
  double rel = mr > 0 ? md / mr : md;
  bool ok = bad == 0 && rel < tol;
  if (!ok) ++failures;
  printf("%-50s %s rel=%.3g nonfinite=%ld\n", what, ok ? "OK  " : "FAIL", rel, bad);
}
const float kNaN = std::numeric_limits<float>::quiet_NaN();
Tensor T(std::vector<float>& v, int64_t r, int64_t c, int64_t stride = 0) {
  return Tensor{v.data(), DType::kF32, r, c, stride};
}

void TestAttention(Backend& cpu, const char* name, int H, int KV, int D, int bs,
                   std::vector<std::pair<int, int>> seqs) {
  int ns = seqs.size(), maxb = 1, total = 0, tokens = 0, maxq = 0, maxkv = 0;
  for (auto [q, kv] : seqs) {
    int b = (kv + bs - 1) / bs;
    maxb = std::max(maxb, b);
    total += b;
    tokens += q;
    maxq = std::max(maxq, q);
    maxkv = std::max(maxkv, kv);
  }
  int nb = total + 3;
  std::vector<int32_t> freeb(nb);
  std::iota(freeb.begin(), freeb.end(), 0);
  std::shuffle(freeb.begin(), freeb.end(), rng);
  std::vector<int32_t> qs{0}, kvl, tab;
  size_t next = 0;
  for (auto [q, kv] : seqs) {
    qs.push_back(qs.back() + q);
    kvl.push_back(kv);
    int b = (kv + bs - 1) / bs;
    for (int j = 0; j < maxb; ++j) tab.push_back(j < b ? freeb[next++] : 0);
  }
  int64_t slots = (int64_t)nb * bs, kvw = KV * D, qw = H * D, pad = 2 * kvw;
  auto kc = Rand(slots * kvw), vc = Rand(slots * kvw), qkv = Rand(tokens * (qw + pad), -2, 2);
  std::vector<float> o_cpu(tokens * qw, kNaN), o_gpu(tokens * qw, kNaN);
  KvCacheShape shape{nb, bs, KV, D};
  AttentionBatch batch{ns, qs.data(), kvl.data(), tab.data(), maxb, maxq, maxkv};
  float scale = 1.0f / std::sqrt((float)D);
  cpu.Attention(T(qkv, tokens, qw, qw + pad), T(kc, slots, kvw), T(vc, slots, kvw), batch, shape, H,
                scale, T(o_cpu, tokens, qw));
  kernels::PagedAttentionParams p;
  p.q = qkv.data();
  p.q_ld = qw + pad;
  p.num_tokens = tokens;
  p.k_cache = kc.data();
  p.v_cache = vc.data();
  p.query_start = qs.data();
  p.kv_len = kvl.data();
  p.block_tables = tab.data();
  p.num_seqs = ns;
  p.max_blocks_per_seq = maxb;
  p.block_size = bs;
  p.num_heads = H;
  p.num_kv_heads = KV;
  p.head_dim = D;
  p.scale = scale;
  p.out = o_gpu.data();
  p.out_ld = qw;
  std::vector<int32_t> ws(ns + 1, -777);
  if (kernels::LaunchPagedAttention(p, ws.data(), nullptr) != cudaSuccess) {
    printf("launch failed\n");
    ++failures;
  }
  Check(name, o_gpu, o_cpu, 1e-4);
}

int main() {
  auto cpu = CreateCpuBackend(2);
  {  // embedding
    int64_t vocab = 30, h = 40, n = 7;
    std::vector<int32_t> ids(n);
    for (auto& i : ids) i = rng() % vocab;
    auto table = Rand(vocab * h);
    for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
      std::vector<uint16_t> half(vocab * h);
      std::vector<float> rounded = table;
      if (dt != DType::kF32) {
        ConvertFromF32(table.data(), table.size(), dt, half.data());
        ConvertToF32(half.data(), dt, table.size(), rounded.data());
      }
      std::vector<float> oc(n * h), og(n * h, kNaN);
      cpu->Embedding(ids.data(), n, T(rounded, vocab, h), T(oc, n, h), false);
      kernels::LaunchEmbedding(ids.data(), n,
                               dt == DType::kF32 ? (void*)table.data() : (void*)half.data(),
                               dt == DType::kF32   ? kernels::ScalarType::kF32
                               : dt == DType::kF16 ? kernels::ScalarType::kF16
                                                   : kernels::ScalarType::kBF16,
                               vocab, h, og.data(), h, false, nullptr);
      Check("embedding", og, oc, 1e-7);
      cpu->Embedding(ids.data(), n, T(rounded, vocab, h), T(oc, n, h), true);
      kernels::LaunchEmbedding(ids.data(), n,
                               dt == DType::kF32 ? (void*)table.data() : (void*)half.data(),
                               dt == DType::kF32   ? kernels::ScalarType::kF32
                               : dt == DType::kF16 ? kernels::ScalarType::kF16
                                                   : kernels::ScalarType::kBF16,
                               vocab, h, og.data(), h, true, nullptr);
      Check("embedding accumulate", og, oc, 1e-7);
    }
  }
  for (int64_t cols : {8, 64, 333, 2048}) {  // norms
    int64_t rows = 3;
    auto x = Rand(rows * cols, -3, 3), w = Rand(cols, .5, 1.5), b = Rand(cols);
    std::vector<float> oc(rows * cols), og(rows * cols, kNaN);
    cpu->RmsNorm(T(x, rows, cols), T(w, 1, cols), 1e-5f, T(oc, rows, cols));
    kernels::LaunchRmsNorm({x.data(), cols}, {}, w.data(), 1e-5f, rows, cols, {og.data(), cols},
                           nullptr);
    Check("rmsnorm", og, oc, 1e-5);
    std::fill(og.begin(), og.end(), kNaN);
    cpu->LayerNorm(T(x, rows, cols), T(w, 1, cols), T(b, 1, cols), 1e-5f, T(oc, rows, cols));
    kernels::LaunchLayerNorm({x.data(), cols}, {}, w.data(), b.data(), 1e-5f, rows, cols,
                             {og.data(), cols}, nullptr);
    Check("layernorm", og, oc, 1e-5);
    // fused residual: res += x; out = norm(res)
    auto res = Rand(rows * cols);
    auto res_c = res;
    cpu->Add(T(res_c, rows, cols), T(x, rows, cols));
    cpu->RmsNorm(T(res_c, rows, cols), T(w, 1, cols), 1e-5f, T(oc, rows, cols));
    std::fill(og.begin(), og.end(), kNaN);
    kernels::LaunchRmsNorm({x.data(), cols}, {res.data(), cols}, w.data(), 1e-5f, rows, cols,
                           {og.data(), cols}, nullptr);
    Check("rmsnorm fused residual out", og, oc, 1e-5);
    Check("rmsnorm fused residual sum", res, res_c, 1e-6);
    // in place
    auto xc = x, xg = x;
    cpu->RmsNorm(T(xc, rows, cols), T(w, 1, cols), 1e-5f, T(xc, rows, cols));
    kernels::LaunchRmsNorm({xg.data(), cols}, {}, w.data(), 1e-5f, rows, cols, {xg.data(), cols},
                           nullptr);
    Check("rmsnorm in place", xg, xc, 1e-5);
  }
  for (auto [heads, d, theta] : {std::tuple{8, 8, 1e4}, {4, 64, 1e4}, {3, 80, 5e5}}) {  // rope
    int64_t t = 6, width = heads * d, pad = 2 * d;
    std::vector<int32_t> pos(t);
    for (int i = 0; i < t; ++i) pos[i] = i < 2 ? i : rng() % 131072;
    auto xc = Rand(t * (width + pad));
    auto xg = xc;
    cpu->Rope(Tensor{xc.data() + d, DType::kF32, t, width, width + pad}, pos.data(), heads, d,
              theta);
    kernels::LaunchRope(xg.data() + d, width + pad, t, pos.data(), heads, d, theta, nullptr);
    Check("rope", xg, xc, 1e-6);
  }
  for (auto act : {Activation::kSilu, Activation::kGeluTanh, Activation::kGeluErf}) {
    int64_t t = 3, inter = 37;
    auto gu = Rand(t * 2 * inter, -6, 6);
    std::vector<float> oc(t * inter), og(t * inter, kNaN);
    cpu->GatedActivation(T(gu, t, 2 * inter), act, T(oc, t, inter));
    kernels::LaunchGatedActivation(gu.data(), 2 * inter, t, inter, (kernels::ActivationKind)act,
                                   og.data(), inter, nullptr);
    Check("gated", og, oc, 1e-6);
    auto xc = gu, xg = gu;
    cpu->ActivationInPlace(T(xc, t, 2 * inter), act);
    kernels::LaunchActivationInPlace(xg.data(), 2 * inter, t, 2 * inter,
                                     (kernels::ActivationKind)act, nullptr);
    Check("act in place", xg, xc, 1e-6);
  }
  {  // add + bias + convert + gather + kv write
    int64_t r = 5, c = 33;
    auto x = Rand(r * c), y = Rand(r * c);
    auto xc = x;
    cpu->Add(T(xc, r, c), T(y, r, c));
    kernels::LaunchAdd(x.data(), c, y.data(), c, r, c, nullptr);
    Check("add", x, xc, 1e-7);
    auto bias = Rand(c);
    auto xb = x;
    for (int i = 0; i < r; ++i)
      for (int j = 0; j < c; ++j) xb[i * c + j] += bias[j];
    kernels::LaunchAddBias(x.data(), c, bias.data(), r, c, nullptr);
    Check("add bias", x, xb, 1e-7);
    std::vector<uint16_t> h(r * c);
    std::vector<float> back(r * c), want(r * c);
    kernels::LaunchConvertF32(x.data(), c, r, c, kernels::ScalarType::kBF16, h.data(), nullptr);
    ConvertToF32(h.data(), DType::kBF16, h.size(), back.data());
    want = x;
    {
      std::vector<uint16_t> hh(r * c);
      ConvertFromF32(x.data(), x.size(), DType::kBF16, hh.data());
      ConvertToF32(hh.data(), DType::kBF16, hh.size(), want.data());
    }
    Check("convert bf16", back, want, 1e-7);
    std::vector<int32_t> rows{4, 0, 2};
    std::vector<float> oc(3 * (c - 3)), og(3 * (c - 3), kNaN);
    cpu->GatherRows(Tensor{x.data() + 3, DType::kF32, r, c - 3, c}, rows.data(), 3,
                    T(oc, 3, c - 3));
    kernels::LaunchGatherRows(x.data() + 3, c, r, c - 3, rows.data(), 3, og.data(), c - 3, nullptr);
    Check("gather rows", og, oc, 1e-7);
    int64_t t = 4, w = 8, slots = 32;
    auto kv = Rand(t * 3 * w);
    auto cache = Rand(slots * w);
    std::vector<int32_t> map{5, 31, 0, 17};
    auto kc = cache, vc = cache, kg = cache, vg = cache;
    cpu->KvWrite(Tensor{kv.data() + w, DType::kF32, t, w, 3 * w},
                 Tensor{kv.data() + 2 * w, DType::kF32, t, w, 3 * w}, map.data(), T(kc, slots, w),
                 T(vc, slots, w));
    kernels::LaunchKvWrite(kv.data() + w, 3 * w, kv.data() + 2 * w, 3 * w, t, w, map.data(),
                           kg.data(), vg.data(), slots, nullptr);
    Check("kv write k", kg, kc, 1e-7);
    Check("kv write v", vg, vc, 1e-7);
  }
  TestAttention(*cpu, "attn stories", 8, 4, 8, 16, {{37, 37}, {1, 100}, {5, 20}, {1, 1}});
  TestAttention(*cpu, "attn llama1b", 32, 4, 64, 16, {{1, 300}, {1, 17}, {9, 9}, {5, 70}});
  TestAttention(*cpu, "attn MHA split", 3, 3, 64, 16, {{1, 113}, {4, 4}, {1, 64}, {2, 2}});
  TestAttention(*cpu, "attn MHA split 1 head", 1, 1, 32, 16, {{1, 200}});
  TestAttention(*cpu, "attn group 20", 20, 1, 128, 8, {{1, 77}, {3, 40}});
  TestAttention(*cpu, "attn d6", 6, 3, 6, 4, {{3, 10}, {1, 5}, {4, 4}});
  TestAttention(*cpu, "attn d80", 2, 2, 80, 16, {{1, 33}, {3, 50}});
  TestAttention(*cpu, "attn d256", 2, 1, 256, 16, {{1, 50}, {5, 12}});
  TestAttention(*cpu, "attn G=3 pairs=3", 3, 1, 64, 16, {{1, 90}});
  {
    std::vector<std::pair<int, int>> many;
    for (int i = 0; i < 1100; ++i) {
      int kv = 1 + rng() % 5;
      many.push_back({i % 7 == 0 ? std::min(kv, 2) : 1, kv});
    }
    TestAttention(*cpu, "attn 1100 seqs (scan chunks)", 1, 1, 4, 4, many);
  }
  {  // sampling
    int vocab = 300, rows = 8;
    auto logits = Rand(rows * vocab, -8, 8);
    logits[3 * vocab + 10] = logits[3 * vocab + 20] = 100.0f;
    struct K {
      float t;
      int k;
      float p, minp;
    };
    K knobs[] = {{0, 0, 1, 0},        {1, 50, 1, 0}, {.7f, 40, .9f, 0}, {0, 0, 1, 0},
                 {.8f, 200, 1, .05f}, {1, 1, 1, 0},  {2, 7, .5f, .1f},  {1.3f, 300, .95f, 0}};
    std::vector<kernels::DeviceSamplingParams> params(rows);
    std::vector<int32_t> toks(rows, -1);
    std::vector<ScheduledSequence> seqs(rows);
    for (int r = 0; r < rows; ++r) {
      seqs[r].sampling.temperature = knobs[r].t;
      seqs[r].sampling.top_k = knobs[r].k;
      seqs[r].sampling.top_p = knobs[r].p;
      seqs[r].sampling.min_p = knobs[r].minp;
      seqs[r].sampling.seed = 1000 + r;
      seqs[r].output_index = r;
      params[r] = {knobs[r].t, knobs[r].k, knobs[r].p, knobs[r].minp, SeededUniform(1000 + r, r)};
    }
    kernels::LaunchSample(logits.data(), vocab, rows, vocab, params.data(), toks.data(), nullptr);
    int bad = 0;
    for (int r = 0; r < rows; ++r) {
      std::vector<float> row(logits.begin() + r * vocab, logits.begin() + (r + 1) * vocab);
      auto want = SampleToken(absl::MakeSpan(row), seqs[r]);
      if (want.token_id != toks[r]) {
        printf("sample row %d: got %d want %d\n", r, toks[r], want.token_id);
        ++bad;
      }
    }
    printf("%-50s %s\n", "sampling", bad ? "FAIL" : "OK");
    failures += bad;
  }
  printf("failures: %d\n", failures);
  return failures != 0;
}
