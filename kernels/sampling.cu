#include <cfloat>
#include <climits>
#include <cmath>

#include "kernels/internal/device_utils.cuh"
#include "kernels/sampling.cuh"

namespace orca::kernels {
namespace {

using internal::kFullMask;

constexpr int kThreads = 256;

// Token i's logit as the host's sampler sees it: NaN is never chosen (-inf), +inf is
// the largest float (SanitizeLogits), and a token the row's mask does not allow is -inf.
__device__ __forceinline__ float Logit(const float* __restrict__ x,
                                       const uint32_t* __restrict__ mask, int32_t i) {
  if (mask != nullptr && ((mask[i >> 5] >> (i & 31)) & 1u) == 0) return -INFINITY;
  const float v = x[i];
  if (v != v) return -INFINITY;  // NaN
  return v == INFINITY ? FLT_MAX : v;
}

// Candidate order: larger logit first, then smaller index (the host's comparator).
__device__ __forceinline__ bool Before(float v, int32_t i, float bv, int32_t bi) {
  return v > bv || (v == bv && i < bi);
}

// Returns the block-wide best (value, index) to every thread. `sv`, `si`: 32 entries.
__device__ void BlockBest(float& v, int32_t& i, float* sv, int32_t* si) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float ov = __shfl_xor_sync(kFullMask, v, offset);
    const int32_t oi = __shfl_xor_sync(kFullMask, i, offset);
    if (Before(ov, oi, v, i)) {
      v = ov;
      i = oi;
    }
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();  // the previous call's readers are done
  if (lane == 0) {
    sv[warp] = v;
    si[warp] = i;
  }
  __syncthreads();
  v = sv[0];
  i = si[0];
  for (int w = 1; w < static_cast<int>(blockDim.x >> 5); ++w) {
    if (Before(sv[w], si[w], v, i)) {
      v = sv[w];
      i = si[w];
    }
  }
}

// The row's best token (first maximal logit, as the host's Argmax) and its logit, to
// every thread; bi is INT_MAX only for an empty row.
__device__ void RowBest(const float* __restrict__ x, const uint32_t* __restrict__ mask, int32_t n,
                        float* sv, int32_t* si, float& bv, int32_t& bi) {
  bv = -INFINITY;
  bi = INT_MAX;
  for (int32_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float v = Logit(x, mask, i);
    if (Before(v, i, bv, bi)) {
      bv = v;
      bi = i;
    }
  }
  BlockBest(bv, bi, sv, si);
}

// The best token after (prev_v, prev_i) in candidate order (repeated selection: call it
// with +inf, -1 first), to every thread; bi is INT_MAX when none is left.
__device__ void NextBest(const float* __restrict__ x, const uint32_t* __restrict__ mask, int32_t n,
                         float prev_v, int32_t prev_i, float* sv, int32_t* si, float& bv,
                         int32_t& bi) {
  bv = -INFINITY;
  bi = INT_MAX;
  for (int32_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float v = Logit(x, mask, i);
    const bool below_prev = v < prev_v || (v == prev_v && i > prev_i);
    if (below_prev && Before(v, i, bv, bi)) {
      bv = v;
      bi = i;
    }
  }
  BlockBest(bv, bi, sv, si);
}

// The row's best logit and token to every thread (RowBest); false, with the host's
// choice written to *token, when no token can be drawn (every one banned or NaN: its
// argmax).
__device__ bool DrawableTop(const float* __restrict__ x, const uint32_t* __restrict__ mask,
                            int32_t n, float* sv, int32_t* si, float& bv, int32_t& bi,
                            int32_t* token) {
  RowBest(x, mask, n, sv, si, bv, bi);
  if (bi != INT_MAX && bv != -INFINITY) return true;
  if (threadIdx.x == 0) *token = bi == INT_MAX ? 0 : bi;
  return false;
}

// No truncation: the host's draw over the whole vocabulary in id order. Weights
// exp((x - top) / T) in double; each thread sums a contiguous slice, a scan of the
// slice sums finds the slice where the cumulative weight passes u x total, and that
// slice's thread walks it: the first token whose cumulative weight exceeds the draw
// (past the end by rounding: the last token of positive weight). Sums run in another
// order than the host's single pass, so the two can differ only for a draw within
// rounding (~1e-16 of the total) of a boundary.
__device__ void DrawInIdOrder(const float* __restrict__ x, const uint32_t* __restrict__ mask,
                              int32_t n, const DeviceSamplingParams& p, float* sv, int32_t* si,
                              int32_t* token) {
  __shared__ double slice_sum[kThreads];
  __shared__ int32_t last_positive[kThreads];
  float bv;
  int32_t bi;
  if (!DrawableTop(x, mask, n, sv, si, bv, bi, token)) return;
  const double top = bv;
  const int32_t per = (n + kThreads - 1) / kThreads;
  const int32_t begin = min(n, static_cast<int32_t>(threadIdx.x) * per);
  const int32_t end = min(n, begin + per);
  double sum = 0.0;
  int32_t last = -1;
  for (int32_t i = begin; i < end; ++i) {
    const double w = exp((static_cast<double>(Logit(x, mask, i)) - top) / p.temperature);
    if (w > 0.0) last = i;
    sum += w;
  }
  slice_sum[threadIdx.x] = sum;
  last_positive[threadIdx.x] = last;
  __syncthreads();
  __shared__ int32_t chosen_slice;
  __shared__ double slice_start;
  __shared__ double draw_target;
  if (threadIdx.x == 0) {
    double total = 0.0;
    for (int t = 0; t < kThreads; ++t) total += slice_sum[t];
    const double target = p.uniform * total;
    // The last slice of positive weight that starts at or below the target.
    double start = 0.0, chosen_start = 0.0;
    int32_t chosen = -1;
    for (int t = 0; t < kThreads; ++t) {
      if (slice_sum[t] > 0.0 && start <= target) {
        chosen = t;
        chosen_start = start;
      }
      start += slice_sum[t];
    }
    chosen_slice = chosen;
    slice_start = chosen_start;
    draw_target = target;
  }
  __syncthreads();
  if (static_cast<int32_t>(threadIdx.x) != chosen_slice) return;
  const double target = draw_target;
  double cum = slice_start;
  for (int32_t i = begin; i < end; ++i) {
    const double w = exp((static_cast<double>(Logit(x, mask, i)) - top) / p.temperature);
    if (w <= 0.0) continue;
    cum += w;
    if (target < cum) {
      *token = i;
      return;
    }
  }
  *token = last_positive[threadIdx.x];
}

// --- truncation by threshold: top-p / min-p without a small top-k, any top-k --------
//
// The host keeps a prefix of the candidate order (larger logit first, then smaller id)
// and draws from it by inverse CDF in that order. Sorting the vocabulary is what a
// block cannot afford, so prefixes are found by bisection instead: over the logits'
// order-preserving 32-bit keys for the last logit in the prefix, then over the ids of
// the tokens tied at it. Each step is one pass over the row that weighs only the
// tokens in the bracket still undecided (a double exp each, as the host computes them),
// so a row costs a few passes' worth of exps, not the 1024 passes of selecting 1024
// candidates one by one. Sums run in another order than the host's, so a draw within
// rounding (~1e-16 of the total) of a boundary may differ, as in DrawInIdOrder.

// The order-preserving key of a logit (never NaN here): a larger logit, a larger key.
__device__ __forceinline__ uint32_t Key(float v) {
  const uint32_t b = __float_as_uint(v);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

// The logit of a key (keys below Key(-inf) decode to NaN).
__device__ __forceinline__ float FromKey(uint32_t k) {
  return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

// A prefix of the candidate order: the tokens whose key is above `key`, and those at
// `key` with an id up to `last`.
struct Prefix {
  uint32_t key;
  int32_t last;
};
// The whole order: every key is above 0 (NaN is sanitised).
__device__ __forceinline__ Prefix Everything() { return Prefix{0u, INT_MAX}; }

__device__ __forceinline__ bool In(const Prefix& p, uint32_t k, int32_t i) {
  return k > p.key || (k == p.key && i <= p.last);
}

// Whether `a` is a shorter prefix than `b` (of the same order, so a subset).
__device__ __forceinline__ bool Shorter(const Prefix& a, const Prefix& b) {
  return a.key > b.key || (a.key == b.key && a.last < b.last);
}

// The sum of `v` over the block, to every thread, in a fixed order (deterministic).
// `scratch`: 32 doubles of shared memory.
__device__ double BlockSumDouble(double v, double* scratch) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(kFullMask, v, offset);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();  // an earlier call may still be reading scratch
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  double total = 0.0;
  for (int w = 0; w < static_cast<int>(blockDim.x >> 5); ++w) total += scratch[w];
  return total;
}

// One row's logits with what weighs them: exp((x - top) / T) in double, or 1 per token
// (counting, for top-k).
struct Row {
  const float* x;
  const uint32_t* mask;
  int32_t n;
  double top;
  double temperature;
  double* scratch;  // 32 doubles of shared memory

  __device__ double Weight(float v) const {
    return exp((static_cast<double>(v) - top) / temperature);
  }

  // The measure (weight, or count when `count`) of the tokens of `within` whose key is
  // in [lo, hi) (hi = 2^32: no upper bound) and, when `tie` is set, whose key is `lo`
  // and id at most `max_id`. Every thread of the block must call it.
  __device__ double Measure(const Prefix& within, bool count, uint64_t lo, uint64_t hi,
                            bool tie = false, int32_t max_id = INT_MAX) const {
    double m = 0.0;
    for (int32_t i = threadIdx.x; i < n; i += blockDim.x) {
      const float v = Logit(x, mask, i);
      const uint32_t k = Key(v);
      const bool in = tie ? (k == lo && i <= max_id) : (k >= lo && k < hi);
      if (in && In(within, k, i)) m += count ? 1.0 : Weight(v);
    }
    return BlockSumDouble(m, scratch);
  }

  // The shortest prefix of `within` whose measure reaches `target` (exceeds it when
  // `strict`); `within` itself when none does (rounding).
  __device__ Prefix ShortestPrefix(const Prefix& within, bool count, double target,
                                   bool strict) const {
    auto reaches = [&](double m) { return strict ? m > target : m >= target; };
    // The largest key K with measure(key >= K) reaching the target: lo reaches (or is
    // within's own key), hi does not; above_hi = measure(key >= hi).
    uint64_t lo = within.key, hi = uint64_t{1} << 32;
    double above_hi = 0.0;
    while (hi - lo > 1) {
      const uint64_t mid = lo + (hi - lo) / 2;
      const double at_mid = above_hi + Measure(within, count, mid, hi);
      if (reaches(at_mid)) {
        lo = mid;
      } else {
        hi = mid;
        above_hi = at_mid;
      }
    }
    // Among the tokens tied at that key, the fewest (by id) that reach the target.
    const uint32_t key = static_cast<uint32_t>(lo);
    int32_t lo_id = -1, hi_id = key == within.key ? min(within.last, n - 1) : n - 1;
    while (hi_id - lo_id > 1) {
      const int32_t mid = lo_id + (hi_id - lo_id) / 2;
      if (reaches(above_hi + Measure(within, count, key, 0, true, mid))) {
        hi_id = mid;
      } else {
        lo_id = mid;
      }
    }
    return Prefix{key, hi_id};
  }

  // The last token of `p` (in candidate order) with a positive weight, to every thread;
  // -1 when it has none. `sv`, `si`: 32 entries of shared memory.
  __device__ int32_t LastPositive(const Prefix& p, float* sv, int32_t* si) const {
    // The candidate order reversed: the smaller logit, then the larger id, is "better".
    float bv = INFINITY;
    int32_t bi = -1;
    for (int32_t i = threadIdx.x; i < n; i += blockDim.x) {
      const float v = Logit(x, mask, i);
      if (!In(p, Key(v), i) || !(Weight(v) > 0.0)) continue;
      if (v < bv || (v == bv && i > bi)) {
        bv = v;
        bi = i;
      }
    }
    // BlockBest keeps the larger value, then the smaller id: negate both.
    float nv = -bv;
    int32_t ni = bi < 0 ? INT_MAX : -bi;
    BlockBest(nv, ni, sv, si);
    return ni == INT_MAX ? -1 : -ni;
  }
};

// Top-k (count), min-p and top-p as the host applies them, then the inverse-CDF draw,
// all on prefixes found by bisection.
__device__ void DrawByThreshold(const float* __restrict__ x, const uint32_t* __restrict__ mask,
                                int32_t n, const DeviceSamplingParams& p, float* sv, int32_t* si,
                                int32_t* token) {
  __shared__ double scratch[32];
  float bv;
  int32_t bi;
  if (!DrawableTop(x, mask, n, sv, si, bv, bi, token)) return;
  const Row row{x, mask, n, static_cast<double>(bv), static_cast<double>(p.temperature), scratch};
  Prefix candidates = Everything();
  if (p.top_k > 0 && p.top_k < n) {
    candidates = row.ShortestPrefix(Everything(), true, static_cast<double>(p.top_k), false);
  }
  const double sum = row.Measure(candidates, false, 0, uint64_t{1} << 32);
  Prefix kept = candidates;
  if (p.min_p > 0.0f) {
    // The tokens weighing at least min_p (the top one weighs 1): the keys from the
    // smallest whose logit weighs that much.
    const double threshold = fmin(1.0, static_cast<double>(p.min_p));
    uint64_t lo = 0, hi = Key(bv);  // hi weighs enough; lo does not (or decodes to NaN)
    while (hi - lo > 1) {
      const uint64_t mid = lo + (hi - lo) / 2;
      if (row.Weight(FromKey(static_cast<uint32_t>(mid))) >= threshold) {
        hi = mid;
      } else {
        lo = mid;
      }
    }
    const Prefix min_p{static_cast<uint32_t>(hi), INT_MAX};
    if (Shorter(min_p, kept)) kept = min_p;
  }
  if (p.top_p < 1.0f) {
    const Prefix nucleus =
        row.ShortestPrefix(candidates, false, static_cast<double>(p.top_p) * sum, false);
    if (Shorter(nucleus, kept)) kept = nucleus;
  }
  const double kept_sum = row.Measure(kept, false, 0, uint64_t{1} << 32);
  // The first token whose cumulative weight exceeds the draw: the last of the shortest
  // prefix that weighs more (past the end by rounding: the last positive one).
  const Prefix drawn = row.ShortestPrefix(kept, false, p.uniform * kept_sum, true);
  const int32_t t = row.LastPositive(drawn, sv, si);
  if (threadIdx.x == 0) *token = t >= 0 ? t : bi;
}

// The row's logprobs (see the header): log-softmax of the processed logits, as the
// host's LogSoftmaxAt computes it (max, then the sum of exp in double), for the drawn
// token `chosen` and the top `top_n` by repeated selection.
__device__ void WriteLogprobs(const float* __restrict__ x, const uint32_t* __restrict__ mask,
                              int32_t n, int32_t chosen, int32_t top_n, float* sv, int32_t* si,
                              DeviceRowLogprobs* out) {
  __shared__ double scratch[32];
  float m;
  int32_t mi;
  RowBest(x, mask, n, sv, si, m, mi);
  double z = 0.0;
  for (int32_t i = threadIdx.x; i < n; i += blockDim.x) {
    z += exp(static_cast<double>(Logit(x, mask, i)) - m);
  }
  const double log_z = log(BlockSumDouble(z, scratch));
  auto logprob = [&](float v) { return static_cast<float>(static_cast<double>(v) - m - log_z); };
  if (threadIdx.x == 0) out->logprob = logprob(Logit(x, mask, chosen));
  top_n = min(min(top_n, kMaxDeviceLogprobs), n);
  float prev_v = INFINITY;
  int32_t prev_i = -1;
  for (int32_t k = 0; k < top_n; ++k) {
    float bv;
    int32_t bi;
    NextBest(x, mask, n, prev_v, prev_i, sv, si, bv, bi);
    if (threadIdx.x == 0) {
      out->top_ids[k] = bi;
      out->top_logprobs[k] = logprob(bv);
    }
    prev_v = bv;
    prev_i = bi;
  }
}

// Draws one row's token into *token (thread 0 writes it).
__device__ void DrawRow(const float* __restrict__ x, const uint32_t* __restrict__ mask, int32_t n,
                        const DeviceSamplingParams& p, float* sv, int32_t* si, int32_t* token) {
  __shared__ float cand_val[kMaxSampleCandidates];
  __shared__ int32_t cand_idx[kMaxSampleCandidates];
  __shared__ double prob[kMaxSampleCandidates];

  if (p.temperature < 1e-5f) {
    float bv;
    int32_t bi;
    RowBest(x, mask, n, sv, si, bv, bi);
    if (threadIdx.x == 0) *token = bi == INT_MAX ? 0 : bi;
    return;
  }
  if ((p.top_k <= 0 || p.top_k >= n) && p.top_p >= 1.0f && p.min_p <= 0.0f) {
    DrawInIdOrder(x, mask, n, p, sv, si, token);
    return;
  }

  // A large top-k, or top-p / min-p alone: prefixes by bisection.
  if (p.top_k <= 0 || p.top_k > kMaxSampleCandidates) {
    DrawByThreshold(x, mask, n, p, sv, si, token);
    return;
  }

  // The k best candidates in order, by repeated selection below the previous one (the
  // host's arithmetic in the same order, so the same draw to the last bit).
  int32_t k = p.top_k;
  if (k > n) k = n;
  float prev_v = INFINITY;
  int32_t prev_i = -1;
  int32_t found = 0;
  for (; found < k; ++found) {
    float bv;
    int32_t bi;
    NextBest(x, mask, n, prev_v, prev_i, sv, si, bv, bi);
    if (bi == INT_MAX) break;  // the rest are NaN
    if (threadIdx.x == 0) {
      cand_val[found] = bv;
      cand_idx[found] = bi;
    }
    prev_v = bv;
    prev_i = bi;
  }
  if (threadIdx.x != 0) return;
  if (found == 0) {
    *token = 0;
    return;
  }
  if (cand_val[0] == -INFINITY) {  // every token masked or NaN: the host's argmax
    *token = cand_idx[0];
    return;
  }

  // The host sampler's arithmetic, in the same order, in double.
  const double top = cand_val[0];
  double sum = 0.0;
  for (int32_t i = 0; i < found; ++i) {
    prob[i] = exp((static_cast<double>(cand_val[i]) - top) / p.temperature);
    sum += prob[i];
  }
  int32_t keep = found;
  if (p.top_p < 1.0f) {
    double cum = 0.0;
    for (int32_t i = 0; i < found; ++i) {
      cum += prob[i] / sum;
      if (cum >= p.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  if (p.min_p > 0.0f) {
    const double threshold = p.min_p * prob[0];
    int32_t m = 0;
    while (m < keep && prob[m] >= threshold) ++m;
    keep = m > 1 ? m : 1;
  }
  double kept_sum = 0.0;
  for (int32_t i = 0; i < keep; ++i) kept_sum += prob[i];
  const double u = p.uniform * kept_sum;
  int32_t chosen = keep - 1;
  double cum = 0.0;
  for (int32_t i = 0; i < keep; ++i) {
    cum += prob[i];
    if (u < cum) {
      chosen = i;
      break;
    }
  }
  *token = cand_idx[chosen];
}

// Applies each row's edits to its logits in place (distinct tokens: no two threads
// touch one logit).
__global__ void __launch_bounds__(kThreads)
    EditKernel(float* __restrict__ logits, int64_t ld, int64_t vocab,
               const DeviceSamplingParams* __restrict__ params,
               const DeviceLogitEdit* __restrict__ edits) {
  const int64_t row = blockIdx.x;
  const DeviceSamplingParams p = params[row];
  float* x = logits + row * ld;
  for (int32_t e = p.edits_begin + static_cast<int32_t>(threadIdx.x); e < p.edits_end;
       e += blockDim.x) {
    const DeviceLogitEdit d = edits[e];
    if (d.token < 0 || d.token >= vocab) continue;
    float v = x[d.token];
    if (v != v) v = -INFINITY;  // the host sanitises before it edits
    if (v == INFINITY) v = FLT_MAX;
    if (d.ops & kEditBias) v += d.bias;
    if (d.ops & kEditSubtract) v -= d.subtract;
    if (d.ops & kEditRepeat) v = v > 0 ? v / p.repetition_penalty : v * p.repetition_penalty;
    x[d.token] = v;
  }
}

__global__ void __launch_bounds__(kThreads)
    SampleKernel(const float* __restrict__ logits, int64_t ld, int64_t vocab,
                 const DeviceSamplingParams* __restrict__ params,
                 const uint32_t* __restrict__ masks, int32_t* __restrict__ tokens,
                 DeviceRowLogprobs* __restrict__ logprobs) {
  __shared__ float sv[32];
  __shared__ int32_t si[32];
  const int64_t row = blockIdx.x;
  const float* x = logits + row * ld;
  const DeviceSamplingParams p = params[row];
  const int32_t n = static_cast<int32_t>(vocab);
  const uint32_t* mask =
      p.mask_row >= 0 && masks != nullptr ? masks + p.mask_row * ((vocab + 31) / 32) : nullptr;
  DrawRow(x, mask, n, p, sv, si, tokens + row);
  if (logprobs == nullptr || p.logprobs < 0) return;  // the same for the whole block
  __syncthreads();                                    // thread 0's token is visible to the block
  WriteLogprobs(x, mask, n, tokens[row], p.logprobs, sv, si, logprobs + row);
}

}  // namespace

cudaError_t LaunchSample(float* logits, int64_t ld, int64_t rows, int64_t vocab,
                         const DeviceSamplingParams* params, const uint32_t* masks,
                         const DeviceLogitEdit* edits, int32_t* tokens, DeviceRowLogprobs* logprobs,
                         cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (rows < 0 || rows > INT32_MAX || vocab <= 0 || vocab > INT32_MAX) return cudaErrorInvalidValue;
  if (edits != nullptr) {
    EditKernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(logits, ld, vocab, params,
                                                                     edits);
  }
  SampleKernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(logits, ld, vocab, params,
                                                                     masks, tokens, logprobs);
  return cudaGetLastError();
}

}  // namespace orca::kernels
